"""The payment provider's webhook: `POST /billing/stripe/webhook`.

Stripe signs each delivery (`Stripe-Signature`); the provider verifies it before anything is read
(app/services/payments/stripe_provider.py), and a delivery that is not Stripe's is 400. Each event
is applied once, in its own unit of work with the note that it was applied
(app/services/billing/payments.py `apply_event`): a replay answers 200 and does nothing. An event
about a payment we have no record of yet answers 409, so Stripe delivers it again later. No CSRF
token (the signature is the proof), no session, no page: JSON in, JSON out."""

from __future__ import annotations

import logging

from flask import Blueprint, abort, jsonify, request

from app.core.extensions import csrf, db
from app.services.billing.payments import UnknownPayment, apply_event
from app.services.payments import PaymentError, WebhookRefused, payment_provider

log = logging.getLogger(__name__)
bp = Blueprint("payment_webhooks", __name__)
MAX_BODY = 512 * 1024  # Stripe's events are a few kilobytes


@bp.post("/billing/stripe/webhook")
@csrf.exempt
def stripe_webhook():
    provider = payment_provider()
    if provider.name != "stripe":
        abort(404)  # offline payments take no webhooks: the route is as absent as any other
    if (request.content_length or 0) > MAX_BODY:
        return jsonify({"error": "too large"}), 413
    try:
        event = provider.event(request.get_data(cache=False), request.headers.get("Stripe-Signature"))
    except WebhookRefused:
        log.warning("payment webhook refused: bad signature or body")
        return jsonify({"error": "signature verification failed"}), 400
    except PaymentError as exc:
        return jsonify({"error": str(exc)}), 503
    try:
        outcome = apply_event(event)
    except UnknownPayment:
        db.session.rollback()
        return jsonify({"error": "unknown payment: deliver again later"}), 409
    db.session.commit()
    log.info("payment webhook", extra={"event_type": event.type, "outcome": outcome})
    return jsonify({"received": True, "outcome": outcome})
