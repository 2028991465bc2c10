import { Type } from 'typebox'
import { Uuid } from '../../http/schemas.ts'

const Unix = (description: string) => Type.Integer({ description: `${description} (Unix seconds)` })

export const RedirectQuery = Type.Object({
  redirect_url: Type.String({
    minLength: 1,
    maxLength: 2000,
    description:
      'Where the browser goes when the page is done: an absolute https URL (http only for localhost/127.0.0.1) ' +
      'on a host of REDIRECT_ALLOWED_HOSTS, without credentials; otherwise 400',
  }),
})

export const CustomerParams = Type.Object({
  subscription_customer_id: Uuid("The subscription's customer: the company's id (the customer id is the company id)"),
})

export const SubscriptionManagerPage = Type.Object(
  {
    url: Type.String({
      format: 'uri',
      description: 'The page where the plan is chosen and confirmed; its secret token is in the URL',
    }),
    expires_at: Unix('When the page stops working'),
  },
  { additionalProperties: false, title: 'SubscriptionManagerPage' },
)

export const PortalSession = Type.Object(
  {
    token: Type.String({ description: "The session's secret token (shown once, stored only as a hash)" }),
    status: Type.Union([Type.Literal('created'), Type.Literal('logged_in'), Type.Literal('logged_out')], {
      description: 'created → logged_in (first visit) → logged_out',
    }),
    redirect_url: Type.String({ format: 'uri', description: 'Where logging out sends the browser' }),
    object: Type.Literal('portal_session'),
    id: Type.String(),
    expires_at: Unix('When the session stops working'),
    customer_id: Type.String({ description: "The company's id" }),
    created_at: Unix('When the session was made'),
    access_url: Type.String({ format: 'uri', description: "The portal's URL, embedding the token" }),
  },
  { additionalProperties: false, title: 'PortalSession' },
)

export const HostedPage = Type.Object(
  {
    url: Type.String({ format: 'uri', description: 'The page; its secret token is in the URL' }),
    updated_at: Unix('Last change of state'),
    type: Type.String({ description: "Chargebee's page type: manage_payment_sources" }),
    state: Type.Union(
      [Type.Literal('created'), Type.Literal('requested'), Type.Literal('succeeded'), Type.Literal('cancelled')],
      { description: 'created → requested (opened) → succeeded | cancelled' },
    ),
    resource_version: Type.Integer({ description: 'Grows with every change (the last change in milliseconds)' }),
    object: Type.Literal('hosted_page'),
    id: Type.String(),
    expires_at: Unix('When the page stops working'),
    embed: Type.Boolean({ description: 'Always false: the page refuses to be framed' }),
    created_at: Unix('When the page was made'),
  },
  { additionalProperties: false, title: 'HostedPage' },
)
