"""RDF vocabularies that modules of several layers name: the CityBench adapters write them and
reasoning reads them, so they live below both rather than in either (``rsp_jobs.ingest.roads``
builds the road graph with these terms, ``rsp_jobs.reasoning.routes`` routes over it)."""

from __future__ import annotations

from rdflib import Namespace

# CityBench's city traffic vocabulary (city.n3): a road segment's first and second node
CT = Namespace("http://www.insight-centre.org/citytraffic#")
# the road graph's own terms, where neither CityBench file has one (rsp_jobs.ingest.roads lists them)
ROADS = Namespace("urn:rsp:ns:roads/")
