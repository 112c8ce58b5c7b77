"""The client option table as Python sees it (kvpool._kvpool.client_options())."""
from kvpool import _kvpool

from conftest import kvpool_binary


def test_table_lists_fields_aliases_env_and_defaults():
    rows = {r["name"]: r for r in _kvpool.client_options()}
    assert rows["master_server_address"]["aliases"] == ["master_server_addr"]
    assert rows["master_server_address"]["env"] == ["MOONCAKE_MASTER"]
    assert rows["master_server_address"]["default"] == "127.0.0.1:50051"
    assert rows["global_segment_size"]["kind"] == "size"
    assert rows["rpc_timeout_ms"]["default"] == "5000"
    assert all(r["doc"] for r in rows.values())


def test_setup_dict_takes_mooncake_alias_against_a_real_master(pool, uid):
    from kvpool import KVPoolStore
    import kvpool
    s = KVPoolStore()
    rc = s.setup({"master_server_address": pool.master_address, "global_segment_size": "16mb",
                  "heartbeat_interval": 500})
    assert rc == 0, kvpool.last_error()
    assert s.put(f"{uid}-alias", b"through the table") == 0
    assert s.get(f"{uid}-alias") == b"through the table"
    s.close()


def test_setup_dict_unknown_key_names_the_closest_known_key():
    from kvpool import ErrorCode, KVPoolStore
    import kvpool
    s = KVPoolStore()
    assert s.setup({"master_server_adress": "127.0.0.1:1"}) == ErrorCode.INVALID_PARAMS
    assert "unknown key 'master_server_adress'" in kvpool.last_error()
    assert "'master_server_address'" in kvpool.last_error()
    # Python-layer keys (no ClientOptions field) are suggested too.
    assert s.setup({"master_server_addr": "x:1", "ssd_ofload_path": "/tmp"}) == \
        ErrorCode.INVALID_PARAMS
    assert "'ssd_offload_path'" in kvpool.last_error()
    # A table option setup(dict) has no field of its own goes through the table's validation.
    assert s.setup({"master_server_addr": "x:1", "segment_port": 70000}) == \
        ErrorCode.INVALID_PARAMS
    assert "segment_port" in kvpool.last_error()


def test_config_env_names_of_shared_fields_come_from_the_table():
    from kvpool import config
    rows = {r["name"]: r for r in _kvpool.client_options()}
    shared = [f for f in config.ENV_VARS if f in rows and rows[f]["env"]]
    assert set(shared) >= {"master_server_address", "local_hostname", "global_segment_size",
                           "protocol", "tenant_id", "verify_checksum", "tenant_key_file"}
    for field in shared:
        assert config.ENV_VARS[field] == rows[field]["env"][0], field
    # SGLang-only fields stay config.py's own.
    assert config.ENV_VARS["client_server_address"] == "MOONCAKE_CLIENT"
    assert "client_server_address" not in rows


def test_docs_carry_the_table_the_cli_prints():
    """docs/operations.md "Client options" is `kvpool client-options`' output, kept equal."""
    import pathlib
    import subprocess
    printed = subprocess.run([kvpool_binary(), "client-options"], check=True, capture_output=True,
                             text=True, timeout=30).stdout
    docs = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "operations.md").read_text()
    begin, end = "<!-- client-options:begin -->\n", "<!-- client-options:end -->"
    embedded = docs[docs.index(begin) + len(begin):docs.index(end)]
    assert embedded == printed, "docs/operations.md: paste `kvpool client-options` between the markers"
    names = {r["name"] for r in _kvpool.client_options()}
    assert all(f"| `{n}` |" in printed for n in names)


def test_cli_takes_any_table_option_and_refuses_bad_ones(pool, uid, tmp_path):
    import subprocess
    src = tmp_path / "in"
    src.write_bytes(b"cli bytes through -o")
    out = tmp_path / "out"
    cli = kvpool_binary()
    run = lambda *a: subprocess.run([cli, *a], capture_output=True, text=True, timeout=60)
    put = run("put", f"{uid}-cli", str(src), "--master", pool.master_address,
              "-o", "verify_checksum=true", "--option", "heartbeat_interval=500")
    assert put.returncode == 0, put.stderr
    get = run("get", f"{uid}-cli", str(out), "--master", pool.master_address,
              "-o", "verify_checksum=yes")
    assert get.returncode == 0, get.stderr
    assert out.read_bytes() == src.read_bytes()
    # A bad option is a usage error (exit 2) naming it; an unknown one names the closest.
    bad = run("get", f"{uid}-cli", str(out), "--master", pool.master_address,
              "-o", "verify_checksum=maybe")
    assert bad.returncode == 2 and "verify_checksum" in bad.stderr, bad.stderr
    unknown = run("stat", "--master", pool.master_address, "-o", "rpc_timout_ms=5")
    assert unknown.returncode == 2 and "rpc_timeout_ms" in unknown.stderr, unknown.stderr
    malformed = run("stat", "--master", pool.master_address, "-o", "verify_checksum")
    assert malformed.returncode == 2 and "KEY=VALUE" in malformed.stderr, malformed.stderr
