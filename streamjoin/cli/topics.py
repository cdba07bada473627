"""`streamjoin topics`: the broker's topics, their partition counts, the sources declared on
them in sql/, and the joins whose inputs are not co-partitioned."""

from __future__ import annotations

from pathlib import Path


def register(subparsers) -> None:
    parser = subparsers.add_parser("topics", help="topics, partition counts, declared sources, co-partitioning")
    parser.add_argument("--sql", type=Path, default=Path("sql"), help="the project (default: sql/)")
    parser.set_defaults(func=run)


def run(args) -> int:
    from streamjoin.app.engine import Engine
    from streamjoin.app.project import load_project
    from streamjoin.kafka import admin

    engine = Engine()
    settings, bootstrap = engine.settings, engine.bootstrap
    project = load_project(args.sql)
    declared: dict[str, list[str]] = {}
    for source in project.sources:
        declared.setdefault(source.topic, []).append(f"{source.name} ({source.kind}, declared {source.partitions})")
    for query in project.queries:
        declared.setdefault(query.output_topic, []).append(f"output of {query.name}")
        for topic in query.repartition_topics:
            declared.setdefault(topic, []).append(f"repartition topic of {query.name}")
    topics = sorted(set(admin.list_topics(bootstrap, settings=settings)) | set(declared))
    counts = admin.partition_counts(bootstrap, topics, settings=settings, missing_ok=True)
    width = max((len(t) for t in topics), default=5)
    print(f"{'topic'.ljust(width)}  partitions  sources")
    for topic in topics:
        count = str(counts.get(topic, "-"))
        print(f"{topic.ljust(width)}  {count.rjust(10)}  {'; '.join(declared.get(topic, [])) or '(not declared)'}")
    problems = [p for q in project.queries for p in engine.copartitioning_problems(q)]
    print("\nco-partitioning: " + ("every join's inputs are co-partitioned" if not problems else f"{len(problems)} problem(s)"))
    for problem in problems:
        print(f"  ! {problem}")
    return 1 if problems else 0
