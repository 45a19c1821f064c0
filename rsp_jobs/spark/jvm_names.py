"""The JVM's names, looked up once per process instead of at every use.

py4j resolves a name on the JVM by asking the JVM, by reflection, what it is, and asks again
every time: ``F.lit(1)`` is ``jvm["org.apache.spark.sql.functions"]`` (one round trip: a class),
then ``.lit`` on it (one round trip: a static method), then the call. Two of every function
call's three round trips were lookups: 9,448 of the 18,561 round trips the driver waited for
while DOTR's benchmark rules built their plans, and about half of a window query's. What a
class, a package or a static method is does not change in a running JVM, so those answers are
kept on the object that was asked; a static field's value is not (it may change).

A process-wide patch of py4j's three lookup methods (``JVMView``, ``JavaPackage``,
``JavaClass``), installed with the engine's Spark session (``session.get_spark``); each cache
lives on the object asked, so a new gateway (a new ``JVMView``) starts empty.
"""

from __future__ import annotations

from py4j.java_gateway import JavaClass, JavaMember, JavaPackage, JVMView

_NAMES = "_rsp_names"  # the attribute each looked-up object keeps its answers in
_KEPT = (JavaClass, JavaPackage, JavaMember)  # what a name means for the life of the JVM


def cache_jvm_names() -> None:
    """Patch the lookups (idempotent)."""
    for kind in (JVMView, JavaPackage, JavaClass):
        if not getattr(kind.__getattr__, "_rsp_cached", False):
            kind.__getattr__ = _cached(kind.__getattr__)


def _cached(lookup):
    def cached(self, name: str):
        names = self.__dict__.get(_NAMES)
        if names is None:
            names = self.__dict__[_NAMES] = {}
        found = names.get(name)
        if found is None:
            found = lookup(self, name)
            if isinstance(found, _KEPT):
                names[name] = found
        return found

    cached._rsp_cached = True
    cached.__doc__ = lookup.__doc__
    return cached
