"""Billing, as the spec prices the platform (docs/billing.md for developers and operators).

    ledger.py      an account per developer and its append-only ledger; the one way money is written
    pricing.py     what calls cost: the bands, the plans, the one rounding rule
    payments.py    cards, loads of credits, refunds and the payment provider's webhooks
    posting.py     the daily job that draws each finished day's calls from the balance
    plans.py       Build and Scale: bought, upgraded, cancelled, renewed
    standing.py    what the gateway asks per request: balance and spend ceiling, kept briefly
    enterprise.py  an admin's enterprise terms: custom key limits, no ceiling, data storage
    statements.py  the monthly statement, HTML and CSV, reconciling to the ledger to the cent

The payment providers themselves are app/services/payments/."""
