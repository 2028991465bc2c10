import type { Insertable, Kysely } from 'kysely'
import type { AddonsTable, CouponsTable, DB, PlansTable, ProductsTable } from '../../db/tables.ts'
import { keyset, type KeysetPage, type SortColumn } from '../../db/keyset.ts'
import { cutPage } from '../../core/paging.ts'

/** sku, code and id are unique. */
const PLAN_ORDER: SortColumn[] = [{ column: 'price_cents' }, { column: 'sku' }]
const PRODUCT_ORDER: SortColumn[] = [{ column: 'sku' }]
const ADDON_ORDER: SortColumn[] = [{ column: 'name' }, { column: 'id', cast: 'uuid' }]
const COUPON_ORDER: SortColumn[] = [{ column: 'code' }]

/** The catalogue's SQL: plans, products, addons and coupons (not tenant data: one catalogue for all). */
export function createCatalogueRepository(db: Kysely<DB>) {
  return {
    insertPlan: (plan: Insertable<PlansTable>) => db.insertInto('plans').values(plan).execute(),
    findPlan: (id: string) => db.selectFrom('plans').selectAll().where('id', '=', id).executeTakeFirst(),
    findPlanBySku: (sku: string) => db.selectFrom('plans').selectAll().where('sku', '=', sku).executeTakeFirst(),
    async listPlans(filter: { name?: string }, page: KeysetPage) {
      let query = db.selectFrom('plans').selectAll()
      if (filter.name !== undefined) query = query.where('name', '=', filter.name)
      return cutPage(await keyset(query, PLAN_ORDER, page).execute(), page, (row) => [row.price_cents, row.sku])
    },
    async existingPlanSkus(skus: string[]): Promise<Set<string>> {
      if (skus.length === 0) return new Set()
      const rows = await db.selectFrom('plans').select('sku').where('sku', 'in', skus).execute()
      return new Set(rows.map((r) => r.sku))
    },

    insertProduct: (product: Insertable<ProductsTable>) => db.insertInto('products').values(product).execute(),
    async updateProduct(id: string, product: Omit<Insertable<ProductsTable>, 'id'>): Promise<boolean> {
      const result = await db
        .updateTable('products')
        .set({ ...product, updated_at: new Date() })
        .where('id', '=', id)
        .executeTakeFirst()
      return Number(result.numUpdatedRows) > 0
    },
    findProduct: (id: string) => db.selectFrom('products').selectAll().where('id', '=', id).executeTakeFirst(),
    findProductBySku: (sku: string) => db.selectFrom('products').selectAll().where('sku', '=', sku).executeTakeFirst(),
    findProductSkuOwner: (sku: string) =>
      db.selectFrom('products').select('id').where('sku', '=', sku).executeTakeFirst(),
    async listProducts(filter: { category?: string; brand?: string; visible?: boolean }, page: KeysetPage) {
      let query = db.selectFrom('products').selectAll()
      if (filter.category !== undefined) query = query.where('category', '=', filter.category)
      if (filter.brand !== undefined) query = query.where('brand', '=', filter.brand)
      if (filter.visible !== undefined) query = query.where('visible', '=', filter.visible)
      return cutPage(await keyset(query, PRODUCT_ORDER, page).execute(), page, (row) => [row.sku])
    },

    insertAddon: (addon: Insertable<AddonsTable>) => db.insertInto('addons').values(addon).execute(),
    findAddon: (id: string) => db.selectFrom('addons').selectAll().where('id', '=', id).executeTakeFirst(),
    listAddons: async (page: KeysetPage) =>
      cutPage(await keyset(db.selectFrom('addons').selectAll(), ADDON_ORDER, page).execute(), page, (row) => [
        row.name,
        row.id,
      ]),
    findAddons: (ids: string[]) =>
      ids.length === 0 ? Promise.resolve([]) : db.selectFrom('addons').selectAll().where('id', 'in', ids).execute(),

    insertCoupon: (coupon: Insertable<CouponsTable>) => db.insertInto('coupons').values(coupon).execute(),
    findCoupon: (id: string) => db.selectFrom('coupons').selectAll().where('id', '=', id).executeTakeFirst(),
    findCouponByCode: (code: string) =>
      db.selectFrom('coupons').selectAll().where('code', '=', code).executeTakeFirst(),
    listCoupons: async (page: KeysetPage) =>
      cutPage(await keyset(db.selectFrom('coupons').selectAll(), COUPON_ORDER, page).execute(), page, (row) => [
        row.code,
      ]),
  }
}

export type CatalogueRepository = ReturnType<typeof createCatalogueRepository>
