"""Alerts: registered queries' results turned into enriched, stored, provenance-carrying alerts
(``build`` → ``enrich`` → ``store``) and delivered through configured notifiers (``notify``)."""
