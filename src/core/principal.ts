/** Who calls: the client a verified bearer token was issued to, its company and its scopes. */
export interface Principal {
  clientId: string
  /** null for a platform client. */
  companyId: string | null
  scopes: ReadonlySet<string>
  /** Unix seconds. */
  expiresAt: number
}
