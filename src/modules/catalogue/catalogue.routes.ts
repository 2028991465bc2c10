import { Type } from 'typebox'
import type { App } from '../../http/app-types.ts'
import { accepted } from '../../http/app-types.ts'
import { Accepted } from '../../http/schemas.ts'
import { answerPage, listResponse, pageQuery, readPage } from '../../http/pagination.ts'
import type { CatalogueService } from './catalogue.service.ts'
import {
  Addon,
  AddonInput,
  Coupon,
  CouponInput,
  IdParams,
  Plan,
  PlanInput,
  PlanQuery,
  Product,
  ProductInput,
  ProductQuery,
  SkuParams,
} from './catalogue.schemas.ts'

const BASE = '/api/v1/subscription'
const tags = ['Catalogue']

const PAGING = 'Pages with `limit` and `cursor`; without `limit`, the whole list.'

/** Plans, products, addons and coupons: platform clients write, anyone reads (except coupons, the platform's alone). */
export async function catalogueRoutes(app: App, { service }: { service: CatalogueService }) {
  app.post(
    `${BASE}/plans`,
    {
      config: { access: 'platform' },
      schema: {
        operationId: 'createPlan',
        tags,
        summary: 'Create a plan (4)',
        body: PlanInput,
        response: { 202: Accepted },
      },
    },
    async (request, reply) => accepted(reply, `${BASE}/plans/${await service.createPlan(request.body.plan)}`),
  )

  app.get(
    `${BASE}/plans`,
    {
      config: { access: 'public' },
      schema: {
        operationId: 'listPlans',
        tags,
        summary: 'List plans (5)',
        querystring: PlanQuery,
        response: { 200: listResponse(Type.Array(Plan)) },
        description: `Public. By price, then sku. \`name\`: only plans of that exact name. ${PAGING}`,
      },
    },
    async (request, reply) => {
      const page = readPage(request, ['int', 'text'])
      return answerPage(request, reply, page, await service.listPlans({ name: request.query.name }, page))
    },
  )

  app.get(
    `${BASE}/plans/:id`,
    {
      config: { access: 'public' },
      schema: { operationId: 'getPlan', tags, summary: 'Get a plan (7)', params: IdParams, response: { 200: Plan } },
    },
    async (request) => service.getPlan(request.params.id),
  )

  app.get(
    `${BASE}/plans/by_sku/:sku`,
    {
      config: { access: 'public' },
      schema: {
        operationId: 'getPlanBySku',
        tags,
        summary: 'Get a plan by sku (17)',
        params: SkuParams,
        response: { 200: Plan },
      },
    },
    async (request) => service.getPlanBySku(request.params.sku),
  )

  app.post(
    `${BASE}/products`,
    {
      config: { access: 'platform' },
      schema: {
        operationId: 'createProduct',
        tags,
        summary: 'Create a product (12)',
        body: ProductInput,
        response: { 202: Accepted },
      },
    },
    async (request, reply) => accepted(reply, `${BASE}/products/${await service.createProduct(request.body.product)}`),
  )

  app.get(
    `${BASE}/products`,
    {
      config: { access: 'public' },
      schema: {
        operationId: 'listProducts',
        tags,
        summary: 'List products (13)',
        querystring: ProductQuery,
        response: { 200: listResponse(Type.Array(Product)) },
        description: `Public. By sku. Filters: \`category\`, \`brand\`, \`visible\` (exact). ${PAGING}`,
      },
    },
    async (request, reply) => {
      const page = readPage(request, ['text'])
      const { category, brand, visible } = request.query
      return answerPage(request, reply, page, await service.listProducts({ category, brand, visible }, page))
    },
  )

  app.put(
    `${BASE}/products/:id`,
    {
      config: { access: 'platform' },
      schema: {
        operationId: 'updateProduct',
        tags,
        summary: 'Replace a product (15)',
        params: IdParams,
        body: ProductInput,
        response: { 202: Accepted },
      },
    },
    async (request, reply) => {
      await service.updateProduct(request.params.id, request.body.product)
      return accepted(reply)
    },
  )

  app.get(
    `${BASE}/products/:id`,
    {
      config: { access: 'public' },
      schema: {
        operationId: 'getProduct',
        tags,
        summary: 'Get a product (16)',
        params: IdParams,
        response: { 200: Product },
      },
    },
    async (request) => service.getProduct(request.params.id),
  )

  app.post(
    `${BASE}/addons`,
    {
      config: { access: 'platform' },
      schema: {
        operationId: 'createAddon',
        tags,
        summary: 'Create an addon',
        body: AddonInput,
        response: { 202: Accepted },
      },
    },
    async (request, reply) => accepted(reply, `${BASE}/addons/${await service.createAddon(request.body)}`),
  )

  app.get(
    `${BASE}/addons`,
    {
      config: { access: 'public' },
      schema: {
        operationId: 'listAddons',
        tags,
        summary: 'List addons',
        querystring: pageQuery(),
        response: { 200: listResponse(Type.Array(Addon)) },
        description: `Public. By name, then id. ${PAGING}`,
      },
    },
    async (request, reply) => {
      const page = readPage(request, ['text', 'uuid'])
      return answerPage(request, reply, page, await service.listAddons(page))
    },
  )

  app.get(
    `${BASE}/addons/:id`,
    {
      config: { access: 'public' },
      schema: { operationId: 'getAddon', tags, summary: 'Get an addon', params: IdParams, response: { 200: Addon } },
    },
    async (request) => service.getAddon(request.params.id),
  )

  app.post(
    `${BASE}/coupons`,
    {
      config: { access: 'platform' },
      schema: {
        operationId: 'createCoupon',
        tags,
        summary: 'Create a coupon',
        body: CouponInput,
        response: { 202: Accepted },
      },
    },
    async (request, reply) => accepted(reply, `${BASE}/coupons/${await service.createCoupon(request.body)}`),
  )

  // Codes are given to customers, not listed to them: only the platform lists coupons.
  app.get(
    `${BASE}/coupons`,
    {
      config: { access: 'platform' },
      schema: {
        operationId: 'listCoupons',
        tags,
        summary: 'List coupons (platform only)',
        querystring: pageQuery(),
        response: { 200: listResponse(Type.Array(Coupon)) },
        description: `Platform clients only. By code. ${PAGING}`,
      },
    },
    async (request, reply) => {
      const page = readPage(request, ['text'])
      return answerPage(request, reply, page, await service.listCoupons(page))
    },
  )

  // One by one as in the list: a company token could otherwise read a code it was never given.
  app.get(
    `${BASE}/coupons/:id`,
    {
      config: { access: 'platform' },
      schema: {
        operationId: 'getCoupon',
        tags,
        summary: 'Get a coupon (platform only)',
        params: IdParams,
        response: { 200: Coupon },
      },
    },
    async (request) => service.getCoupon(request.params.id),
  )
}
