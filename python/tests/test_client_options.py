"""The client option table as Python sees it (kvpool._kvpool.client_options())."""
from kvpool import _kvpool


def test_table_lists_fields_aliases_env_and_defaults():
    rows = {r["name"]: r for r in _kvpool.client_options()}
    assert rows["master_server_address"]["aliases"] == ["master_server_addr"]
    assert rows["master_server_address"]["env"] == ["MOONCAKE_MASTER"]
    assert rows["master_server_address"]["default"] == "127.0.0.1:50051"
    assert rows["global_segment_size"]["kind"] == "size"
    assert rows["rpc_timeout_ms"]["default"] == "5000"
    assert all(r["doc"] for r in rows.values())
