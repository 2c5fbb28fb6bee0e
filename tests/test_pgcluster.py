"""The test session's throwaway PostgreSQL: reachable on 127.0.0.1, one fresh database per test."""

from __future__ import annotations

from tests.pgcluster import PgCluster


def test_each_test_gets_its_own_empty_database_on_the_loopback_cluster(pg_cluster: PgCluster, pg_url: str) -> None:
    import psycopg

    assert "@127.0.0.1:" in pg_url
    with psycopg.connect(pg_url) as conn:
        tables = conn.execute("SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'"
                              ).fetchone()
        conn.execute("CREATE TABLE marker (id INTEGER)")
    assert tables == (0,)
    other = pg_cluster.create_database()
    try:
        with psycopg.connect(pg_cluster.url(other)) as conn:
            assert conn.execute("SELECT to_regclass('marker')").fetchone() == (None,)
    finally:
        pg_cluster.drop_database(other)
