"""The catalog schema: the only place that says what tables and constraints exist."""

DISCOUNT_TYPES = ("percentage", "fixed_reduction", "buy_x_get_y", "gift", "free_shipping")
EXTRA_CONDITIONS = ("first_purchase",)
ORDER_STATUSES = ("待付款", "待发货", "运输中", "已签收", "已取消", "已退款")
REGIONS = ("华东", "华南", "华北", "华中", "西南", "西北", "东北")


def _one_of(values: tuple[str, ...]) -> str:
    return ", ".join(repr(v) for v in values)


# Money is stored as canonical decimal TEXT so that it reaches Python as an exact Decimal,
# never as a float. The CHECKs keep the text numeric and non-negative.
SCHEMA = f"""
PRAGMA foreign_keys = ON;

CREATE TABLE products (
    product_id      TEXT PRIMARY KEY CHECK (length(product_id) BETWEEN 1 AND 64),
    product_name    TEXT NOT NULL CHECK (length(product_name) > 0),
    category        TEXT NOT NULL DEFAULT '',
    description     TEXT NOT NULL DEFAULT '',
    specifications  TEXT NOT NULL DEFAULT '',
    usage           TEXT NOT NULL DEFAULT '',
    brand           TEXT NOT NULL DEFAULT '',
    price           TEXT CHECK (price IS NULL OR (typeof(price) = 'text' AND CAST(price AS REAL) >= 0)),
    stock_quantity  INTEGER CHECK (stock_quantity IS NULL OR stock_quantity >= 0),
    aliases         TEXT NOT NULL DEFAULT ''   -- other names, '|'-separated (English, short names)
);

CREATE TABLE promotions (
    promotion_id     TEXT PRIMARY KEY,
    product_id       TEXT NOT NULL REFERENCES products(product_id),
    promotion_text   TEXT NOT NULL CHECK (length(promotion_text) > 0),
    discount_type    TEXT NOT NULL CHECK (discount_type IN ({", ".join(repr(t) for t in DISCOUNT_TYPES)})),
    discount_value   TEXT CHECK (discount_value IS NULL OR CAST(discount_value AS REAL) >= 0),
    minimum_quantity INTEGER CHECK (minimum_quantity IS NULL OR minimum_quantity >= 1),
    minimum_spend    TEXT CHECK (minimum_spend IS NULL OR CAST(minimum_spend AS REAL) >= 0),
    extra_condition  TEXT CHECK (extra_condition IS NULL OR extra_condition IN ({", ".join(repr(c) for c in EXTRA_CONDITIONS)}))
);
CREATE INDEX promotions_by_product ON promotions(product_id);
CREATE INDEX products_by_category ON products(category);
CREATE INDEX products_by_brand ON products(brand);

CREATE TABLE knowledge_docs (
    doc_id   TEXT PRIMARY KEY,
    title    TEXT NOT NULL,
    content  TEXT NOT NULL
);

-- One product per order row. created_at: ISO 8601 local time (Asia/Shanghai), "2026-11-02T14:20:00".
CREATE TABLE orders (
    order_id    TEXT PRIMARY KEY,
    user_id     TEXT NOT NULL,
    product_id  TEXT NOT NULL REFERENCES products(product_id),
    quantity    INTEGER NOT NULL CHECK (quantity > 0),
    total       TEXT NOT NULL CHECK (typeof(total) = 'text' AND CAST(total AS REAL) >= 0),
    status      TEXT NOT NULL CHECK (status IN ({_one_of(ORDER_STATUSES)})),
    region      TEXT NOT NULL CHECK (region IN ({_one_of(REGIONS)})),
    created_at  TEXT NOT NULL CHECK (created_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]')
);
-- the filters the aggregates use: a period, alone or with a status, a region or a product
CREATE INDEX orders_by_user ON orders(user_id, created_at);
CREATE INDEX orders_by_time ON orders(created_at, status, region, product_id, quantity, total);   -- covering: a long period is read from the index alone
CREATE INDEX orders_by_status ON orders(status, created_at);
CREATE INDEX orders_by_region ON orders(region, created_at);
CREATE INDEX orders_by_product ON orders(product_id, created_at);

CREATE TABLE catalog_meta (
    key    TEXT PRIMARY KEY,
    value  TEXT NOT NULL
);
"""
