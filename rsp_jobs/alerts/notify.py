"""Delivering alerts: one small interface, a few sinks, chosen by configuration.

``RSP_NOTIFIERS`` is a comma-separated list (default ``log,json``):

- ``log``: one line per alert on the ``rsp.alerts`` logger (the Airflow task log);
- ``json`` or ``json:PATH``: appended as one JSON object per line to PATH (default
  ``<RSP_HOME>/alerts/alerts.jsonl``);
- ``webhook:URL``: POSTed as JSON to URL (10 s timeout; a failure fails the delivery);
- ``airflow:package.module.Class``: an Airflow notifier (a ``BaseNotifier`` subclass, e.g. a
  provider's Slack or SMTP notifier) built with the keyword arguments of the JSON object in
  ``RSP_AIRFLOW_NOTIFIER_KWARGS`` and called with the task context plus ``rsp_alert``.

Delivery happens after the alert is stored, and the store remembers what was delivered, so a
re-run of an alert task never notifies twice.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import urllib.request
from pathlib import Path
from typing import Protocol

from rsp_jobs import settings
from rsp_jobs.errors import InputError

log = logging.getLogger("rsp.alerts")


class Notifier(Protocol):
    def notify(self, alert: dict, context: dict | None = None) -> None:
        """Deliver one alert (its JSON form, ``Alert.as_dict``)."""


class LogNotifier:
    def notify(self, alert: dict, context: dict | None = None) -> None:
        log.warning(
            "ALERT %s %s at %s: %s",
            alert["kind"],
            alert["subject"],
            alert["event_time"],
            alert["message"],
        )


class JsonFileNotifier:
    def __init__(self, path: str | None = None):
        self.path = Path(path) if path else settings.home_dir() / "alerts" / "alerts.jsonl"

    def notify(self, alert: dict, context: dict | None = None) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(alert, ensure_ascii=False, sort_keys=True) + "\n")


class WebhookNotifier:
    def __init__(self, url: str):
        self.url = url

    def notify(self, alert: dict, context: dict | None = None) -> None:
        request = urllib.request.Request(
            self.url,
            data=json.dumps(alert).encode(),
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            if response.status >= 300:
                raise RuntimeError(f"webhook {self.url} answered {response.status}")


class AirflowNotifier:
    """Adapts an Airflow ``BaseNotifier`` (called as an on-callback would call it)."""

    def __init__(self, class_path: str, kwargs: dict | None = None):
        module, _, name = class_path.rpartition(".")
        try:
            cls = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError, ValueError) as exc:
            raise InputError(
                f"RSP_NOTIFIERS: airflow:{class_path}: cannot import it ({exc})"
            ) from None
        self.notifier = cls(**(kwargs or {}))

    def notify(self, alert: dict, context: dict | None = None) -> None:
        self.notifier.notify({**(context or {}), "rsp_alert": alert})


def configured(spec: str | None = None) -> list[Notifier]:
    """The notifiers named by ``spec`` (default: ``RSP_NOTIFIERS`` or ``log,json``)."""
    spec = spec if spec is not None else os.environ.get("RSP_NOTIFIERS", "log,json")
    notifiers: list[Notifier] = []
    for item in filter(None, (part.strip() for part in spec.split(","))):
        kind, _, arg = item.partition(":")
        if kind == "log":
            notifiers.append(LogNotifier())
        elif kind == "json":
            notifiers.append(JsonFileNotifier(arg or None))
        elif kind == "webhook" and arg:
            notifiers.append(WebhookNotifier(arg))
        elif kind == "airflow" and arg:
            kwargs = os.environ.get("RSP_AIRFLOW_NOTIFIER_KWARGS", "{}")
            try:
                notifiers.append(AirflowNotifier(arg, json.loads(kwargs)))
            except json.JSONDecodeError as exc:
                raise InputError(
                    f"RSP_AIRFLOW_NOTIFIER_KWARGS: not a JSON object ({exc})"
                ) from None
        else:
            raise InputError(
                f"RSP_NOTIFIERS: unknown notifier {item!r} (expected log, json[:PATH], "
                "webhook:URL or airflow:module.Class)"
            )
    return notifiers
