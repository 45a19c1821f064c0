"""TA-SPARQL plans → SQL: one generator (``generate``) over SQLAlchemy Core, and a module per
dialect (``sqlite``, ``postgresql``) with the SQL each writes for the elements it lacks a
common form for (``elements``): times as milliseconds, lexical forms, exact decimals."""
