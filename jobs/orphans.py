"""Assets a query no longer defines: a deleted (or renamed) query file leaves its query, topic and
Delta-table assets in the instance's event log, where the catalog keeps listing them as if they
were still produced. The `query_status` sensor wipes them: an asset no definition has any more
whose latest materialization came from a run about a query (tagged QUERY_TAG). A file that does
not compile keeps its assets (its query comes back when it is fixed); the data itself (topics,
tables) is left alone."""

import dagster as dg

from assets.keys import QUERY_TAG


def orphans(instance: dg.DagsterInstance, defined: set[dg.AssetKey],
            broken: set[str]) -> dict[dg.AssetKey, str]:
    """{asset key: the query whose run last materialized it} of the undefined assets a query wrote."""
    found = {}
    for key in instance.get_asset_keys():
        if key in defined:
            continue
        event = instance.get_latest_materialization_event(key)
        run = instance.get_run_by_id(event.run_id) if event and event.run_id else None
        query = run.tags.get(QUERY_TAG) if run else None
        if query and query not in broken:
            found[key] = query
    return found


def wipe_orphans(instance: dg.DagsterInstance, defined: set[dg.AssetKey],
                 broken: set[str]) -> list[str]:
    """Wipe the orphans; one line per asset wiped."""
    found = orphans(instance, defined, broken)
    if found:
        instance.wipe_assets(list(found))
    return [f"{key.to_user_string()}: wiped (query {query} no longer defines it)"
            for key, query in sorted(found.items(), key=lambda item: item[0].to_user_string())]
