import { Type } from 'typebox'
import type { App } from '../../http/app-types.ts'
import { accepted } from '../../http/app-types.ts'
import { Accepted } from '../../http/schemas.ts'
import type { CatalogueService } from './catalogue.service.ts'
import {
  Addon, AddonInput, Coupon, CouponInput, IdParams, Plan, PlanInput, PlanQuery, Product, ProductInput, ProductQuery, SkuParams,
} from './catalogue.schemas.ts'

const BASE = '/api/v1/subscription'
const tags = ['Catalogue']

/** Plans, products, addons and coupons: platform clients write, anyone reads (except the coupon list). */
export async function catalogueRoutes(app: App, { service }: { service: CatalogueService }) {
  app.post(`${BASE}/plans`, {
    config: { access: 'platform' },
    schema: { operationId: 'createPlan', tags, summary: 'Create a plan (4)', body: PlanInput, response: { 202: Accepted } },
  }, async (request, reply) => accepted(reply, `${BASE}/plans/${await service.createPlan(request.body.plan)}`))

  app.get(`${BASE}/plans`, {
    config: { access: 'public' },
    schema: { operationId: 'listPlans', tags, summary: 'List plans (5)', querystring: PlanQuery, response: { 200: Type.Array(Plan) } },
  }, async (request) => service.listPlans(request.query))

  app.get(`${BASE}/plans/:id`, {
    config: { access: 'public' },
    schema: { operationId: 'getPlan', tags, summary: 'Get a plan (7)', params: IdParams, response: { 200: Plan } },
  }, async (request) => service.getPlan(request.params.id))

  app.get(`${BASE}/plans/by_sku/:sku`, {
    config: { access: 'public' },
    schema: { operationId: 'getPlanBySku', tags, summary: 'Get a plan by sku (17)', params: SkuParams, response: { 200: Plan } },
  }, async (request) => service.getPlanBySku(request.params.sku))

  app.post(`${BASE}/products`, {
    config: { access: 'platform' },
    schema: { operationId: 'createProduct', tags, summary: 'Create a product (12)', body: ProductInput, response: { 202: Accepted } },
  }, async (request, reply) => accepted(reply, `${BASE}/products/${await service.createProduct(request.body.product)}`))

  app.get(`${BASE}/products`, {
    config: { access: 'public' },
    schema: { operationId: 'listProducts', tags, summary: 'List products (13)', querystring: ProductQuery, response: { 200: Type.Array(Product) } },
  }, async (request) => service.listProducts(request.query))

  app.put(`${BASE}/products/:id`, {
    config: { access: 'platform' },
    schema: { operationId: 'updateProduct', tags, summary: 'Replace a product (15)', params: IdParams, body: ProductInput, response: { 202: Accepted } },
  }, async (request, reply) => {
    await service.updateProduct(request.params.id, request.body.product)
    return accepted(reply)
  })

  app.get(`${BASE}/products/:id`, {
    config: { access: 'public' },
    schema: { operationId: 'getProduct', tags, summary: 'Get a product (16)', params: IdParams, response: { 200: Product } },
  }, async (request) => service.getProduct(request.params.id))

  app.post(`${BASE}/addons`, {
    config: { access: 'platform' },
    schema: { operationId: 'createAddon', tags, summary: 'Create an addon', body: AddonInput, response: { 202: Accepted } },
  }, async (request, reply) => accepted(reply, `${BASE}/addons/${await service.createAddon(request.body)}`))

  app.get(`${BASE}/addons`, {
    config: { access: 'public' },
    schema: { operationId: 'listAddons', tags, summary: 'List addons', response: { 200: Type.Array(Addon) } },
  }, async () => service.listAddons())

  app.get(`${BASE}/addons/:id`, {
    config: { access: 'public' },
    schema: { operationId: 'getAddon', tags, summary: 'Get an addon', params: IdParams, response: { 200: Addon } },
  }, async (request) => service.getAddon(request.params.id))

  app.post(`${BASE}/coupons`, {
    config: { access: 'platform' },
    schema: { operationId: 'createCoupon', tags, summary: 'Create a coupon', body: CouponInput, response: { 202: Accepted } },
  }, async (request, reply) => accepted(reply, `${BASE}/coupons/${await service.createCoupon(request.body)}`))

  // Codes are given to customers, not listed to them: only the platform lists coupons.
  app.get(`${BASE}/coupons`, {
    config: { access: 'platform' },
    schema: { operationId: 'listCoupons', tags, summary: 'List coupons (platform only)', response: { 200: Type.Array(Coupon) } },
  }, async () => service.listCoupons())

  app.get(`${BASE}/coupons/:id`, {
    config: { access: 'public' },
    schema: { operationId: 'getCoupon', tags, summary: 'Get a coupon', params: IdParams, response: { 200: Coupon } },
  }, async (request) => service.getCoupon(request.params.id))
}
