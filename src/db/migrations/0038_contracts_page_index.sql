-- Issue 19: a page of contracts read from one index, the table's rows left alone. The list's
-- order (0018) with every column a page shows besides its teams: a company's contracts lie
-- scattered over the table's pages (each written when it was hired, among every other company's
-- writes), so a page of 50 read 50 of them, then sorted what it had read. The old index had the
-- order alone; this one replaces it.
CREATE INDEX contracts_page_idx ON contracts (company_id, last_name, first_name, id) INCLUDE (email, subsidiary_id, active);
DROP INDEX contracts_name_idx;
