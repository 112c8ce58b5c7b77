"""Configuration read like SGLang's Mooncake backend: sources, precedence, defaults, sizes,
validation, and every device_name form with its error."""

import json
import logging

import pytest

from kvpool.config import KVPoolConfigError, KVPoolStoreConfig, parse_device_name, \
    resolve_device_name

GiB = 1024**3


def load(extra=None):
    return KVPoolStoreConfig.load(extra)


# ---- sources and precedence -----------------------------------------------------------------

def test_env_source_with_defaults(clean_env):
    clean_env.setenv("MOONCAKE_MASTER", "10.0.0.1:50051")
    c = load()
    assert c.source == "env"
    assert c.master_server_address == "10.0.0.1:50051"
    assert (c.local_hostname, c.metadata_server, c.global_segment_size, c.protocol,
            c.device_name, c.master_metrics_port, c.check_server, c.standalone_storage,
            c.client_server_address, c.enable_ssd_offload, c.ssd_offload_path, c.tenant_id,
            c.standalone_allocator_mismatch) == \
        ("localhost", "P2PHANDSHAKE", 4 * GiB, "tcp", "", 9003, False, False, None, False,
         None, "default", "error")


def test_env_source_reads_every_variable(clean_env, tmp_path):
    env = {
        "MOONCAKE_LOCAL_HOSTNAME": "node7", "MOONCAKE_TE_META_DATA_SERVER": "etcd://x",
        "MOONCAKE_GLOBAL_SEGMENT_SIZE": "8gb", "MOONCAKE_PROTOCOL": "tcp",
        "MOONCAKE_DEVICE": "mlx5_0,mlx5_1", "MOONCAKE_MASTER": "m:1",
        "MOONCAKE_MASTER_METRICS_PORT": "9100", "MOONCAKE_CHECK_SERVER": "true",
        "MOONCAKE_STANDALONE_STORAGE": "1", "MOONCAKE_CLIENT": "127.0.0.1:6000",
        "MOONCAKE_ENABLE_SSD_OFFLOAD": "false", "MOONCAKE_OFFLOAD_FILE_STORAGE_PATH": "/ssd",
        "MOONCAKE_TENANT_ID": " ", "KVPOOL_STANDALONE_ALLOCATOR_MISMATCH": "Copy",
        "SGLANG_MOONCAKE_LOCAL_BUFFER_SIZE": "32mb",
    }
    for k, v in env.items():
        clean_env.setenv(k, v)
    c = load()
    assert (c.local_hostname, c.metadata_server, c.global_segment_size, c.device_name,
            c.master_metrics_port, c.check_server, c.standalone_storage,
            c.client_server_address, c.enable_ssd_offload, c.ssd_offload_path, c.tenant_id,
            c.standalone_allocator_mismatch, c.local_buffer_size) == \
        ("node7", "etcd://x", 8 * GiB, "mlx5_0,mlx5_1", 9100, True, True, "127.0.0.1:6000",
         False, "/ssd", "default", "copy", 32 << 20)


def test_verify_checksum_from_env_and_extra_config(clean_env):
    clean_env.setenv("MOONCAKE_MASTER", "m:1")
    assert load().verify_checksum is False
    clean_env.setenv("KVPOOL_VERIFY_CHECKSUM", "true")
    assert load().verify_checksum is True
    clean_env.delenv("KVPOOL_VERIFY_CHECKSUM")
    assert load({"verify_checksum": True}).verify_checksum is True
    assert load({"master_server_address": "x:1", "verify_checksum": "1"}).verify_checksum is True


def test_env_legacy_local_hostname(clean_env):
    clean_env.setenv("MOONCAKE_MASTER", "m:1")
    clean_env.setenv("LOCAL_HOSTNAME", "legacy-host")
    assert load().local_hostname == "legacy-host"
    clean_env.setenv("MOONCAKE_LOCAL_HOSTNAME", "new-host")
    assert load().local_hostname == "new-host"


def test_env_needs_an_address(clean_env):
    with pytest.raises(KVPoolConfigError, match="MOONCAKE_MASTER.*MOONCAKE_CLIENT"):
        load()


def test_file_source_and_its_defaults(clean_env, tmp_path):
    path = tmp_path / "mooncake.json"
    path.write_text(json.dumps({"master_server_address": "f:1", "global_segment_size": "1gb",
                                "local_hostname": "filehost"}))
    clean_env.setenv("SGLANG_HICACHE_MOONCAKE_CONFIG_PATH", str(path))
    # The environment does not fill fields the file leaves out (SGLang's behaviour).
    clean_env.setenv("MOONCAKE_MASTER", "env:1")
    clean_env.setenv("MOONCAKE_PROTOCOL", "rdma")
    c = load()
    assert c.source == f"file {path}"
    assert (c.master_server_address, c.global_segment_size, c.local_hostname, c.protocol) == \
        ("f:1", GiB, "filehost", "tcp")


@pytest.mark.parametrize("content, needle", [
    (None, "does not exist"),
    ("{not json", "not valid JSON"),
    ("[1, 2]", "expected a JSON object"),
    ('{"protocol": "tcp"}', "Either master_server_address or client_server_address"),
])
def test_file_source_errors(clean_env, tmp_path, content, needle):
    path = tmp_path / "c.json"
    if content is not None:
        path.write_text(content)
    clean_env.setenv("SGLANG_HICACHE_MOONCAKE_CONFIG_PATH", str(path))
    with pytest.raises(KVPoolConfigError, match=needle) as e:
        load()
    assert str(path) in str(e.value)


def test_extra_config_wins_over_file_and_env(clean_env, tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"master_server_address": "file:1"}))
    clean_env.setenv("SGLANG_HICACHE_MOONCAKE_CONFIG_PATH", str(path))
    clean_env.setenv("MOONCAKE_MASTER", "env:1")
    c = load({"master_server_address": "extra:1", "global_segment_size": 1024,
              "backend_name": "kvpool", "module_path": "kvpool.sglang"})
    assert (c.source, c.master_server_address, c.global_segment_size) == \
        ("extra_config", "extra:1", 1024)


def test_extra_config_without_address_defers_to_file_then_env(clean_env, tmp_path):
    extra = {"backend_name": "kvpool", "standalone_allocator_mismatch": "embedded"}
    clean_env.setenv("MOONCAKE_MASTER", "env:1")
    c = load(extra)
    assert (c.source, c.master_server_address) == ("env", "env:1")
    assert c.standalone_allocator_mismatch == "embedded"  # kvpool keys apply from extra_config
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"master_server_address": "file:1"}))
    clean_env.setenv("SGLANG_HICACHE_MOONCAKE_CONFIG_PATH", str(path))
    assert load(extra).master_server_address == "file:1"


def test_standalone_defaults_client_address(clean_env):
    c = load({"client_server_address": None, "master_server_address": "m:1",
              "standalone_storage": True})
    assert c.client_server_address == "127.0.0.1:50052"
    with pytest.raises(KVPoolConfigError, match="master_server_address is required"):
        load({"client_server_address": "127.0.0.1:1"})


def test_per_rank_segment_size(clean_env):
    c = load({"master_server_address": "m:1", "global_segment_size": "8gb"})
    assert c.per_rank_segment_size(tp_size=4, pp_size=2) == GiB


@pytest.mark.parametrize("field, value, needle", [
    ("global_segment_size", -1, "negative"),
    ("global_segment_size", "50%", "global_segment_size"),
    ("global_segment_size", "4 parsecs", "global_segment_size"),
    ("global_segment_size", True, "not a bool"),
    ("local_buffer_size", [1], "must be an int"),
    ("protocol", "udp", "protocol='udp'"),
    ("check_server", "maybe", "check_server"),
    ("master_metrics_port", "http", "master_metrics_port"),
    ("master_metrics_port", 70000, "master_metrics_port"),
    ("standalone_allocator_mismatch", "ignore", "error, copy, embedded"),
    ("local_hostname", 5, "local_hostname"),
    ("device_name", 7, "device_name"),
])
def test_bad_values_are_named(clean_env, field, value, needle):
    with pytest.raises(KVPoolConfigError, match=needle) as e:
        load({"master_server_address": "m:1", field: value})
    assert "extra_config" in str(e.value) or field == "device_name"


def test_unknown_key_typo_warns(clean_env, caplog):
    with caplog.at_level(logging.WARNING, logger="kvpool.config"):
        load({"master_server_address": "m:1", "global_segmant_size": 1, "interface_v1": 1})
    assert "did you mean 'global_segment_size'" in caplog.text
    assert "interface_v1" not in caplog.text


# ---- device_name ----------------------------------------------------------------------------

def test_device_name_plain_list_and_empty():
    assert parse_device_name("mlx5_0,mlx5_1") == "mlx5_0,mlx5_1"
    assert parse_device_name("") is None and parse_device_name(None) is None
    assert resolve_device_name("mlx5_0", 3) == "mlx5_0"
    assert resolve_device_name("", 0) == ""


def test_device_name_json_mapping_string_and_int_keys():
    assert parse_device_name('{"0": "mlx5_0", "1": "mlx5_1, mlx5_2"}') == \
        {0: "mlx5_0", 1: "mlx5_1, mlx5_2"}
    assert parse_device_name({0: "a", "1": ["b", "c"]}) == {0: "a", 1: "b,c"}
    assert resolve_device_name('{"0": "mlx5_0", "1": "mlx5_1"}', 1) == "mlx5_1"
    assert resolve_device_name({1: "mlx5_1"}, 0) == ""  # no entry for this rank


def test_device_name_json_file(tmp_path):
    path = tmp_path / "nics.json"
    path.write_text(json.dumps({"0": "mlx5_0", "1": "mlx5_1"}))
    assert parse_device_name(str(path)) == {0: "mlx5_0", 1: "mlx5_1"}
    assert resolve_device_name(str(path), 1) == "mlx5_1"
    plain = tmp_path / "nics"  # a path without .json is recognised by its "/"
    plain.write_text(json.dumps({"2": "mlx5_2"}))
    assert parse_device_name(str(plain)) == {2: "mlx5_2"}


@pytest.mark.parametrize("make, error", [
    (lambda d: str(d / "missing.json"), "File .*missing.json does not exist"),
    (lambda d: _write(d / "bad.json", "{oops"), "Failed to parse JSON content from file"),
    (lambda d: _write(d / "list.json", '["mlx5_0"]'),
     "Invalid format: expected a mapping from GPU id to IB device"),
    (lambda d: _mkdir(d / "dir.json"), "Failed to read JSON file .*dir.json: .*directory"),
    (lambda d: _write_bytes(d / "latin1.json", b'{"0": "\xe9"}'),
     "Failed to read JSON file .*latin1.json"),
    (lambda d: "{0: mlx5_0}", r"Invalid JSON mapping: \{0: mlx5_0\}"),
    (lambda d: '["mlx5_0"]', "Invalid format: expected a mapping from GPU id to IB device"),
    (lambda d: '{"gpu0": "mlx5_0"}', "GPU id 'gpu0'.*not an integer"),
    (lambda d: '{"0": 5}', "IB device of GPU 0.*values must be strings"),
    (lambda d: '{"0": ["mlx5_0", 1]}', "values must be strings"),
    (lambda d: "{}", "No valid GPU mappings found"),
])
def test_device_name_errors(tmp_path, make, error):
    value = make(tmp_path)
    with pytest.raises(KVPoolConfigError, match=error):
        parse_device_name(value)


def test_bad_device_name_fails_config_loading(clean_env):
    with pytest.raises(KVPoolConfigError, match="Invalid JSON mapping"):
        load({"master_server_address": "m:1", "device_name": "{broken"})


def _write(path, text):
    path.write_text(text)
    return str(path)


def _write_bytes(path, data):
    path.write_bytes(data)
    return str(path)


def _mkdir(path):
    path.mkdir()
    return str(path)


def test_tenant_id_and_key_file_from_env_and_extra_config(clean_env):
    clean_env.setenv("MOONCAKE_MASTER", "m:1")
    c = load()
    assert (c.tenant_id, c.tenant_key_file) == ("default", None)
    clean_env.setenv("MOONCAKE_TENANT_ID", "team-a")
    clean_env.setenv("KVPOOL_TENANT_KEY_FILE", "/etc/kvpool/team-a.key")
    c = load()
    assert (c.tenant_id, c.tenant_key_file) == ("team-a", "/etc/kvpool/team-a.key")
    c = load({"master_server_address": "x:1", "tenant_id": "team-b",
              "tenant_key_file": "/k"})
    assert (c.tenant_id, c.tenant_key_file) == ("team-b", "/k")
    with pytest.raises(KVPoolConfigError, match="tenant_id"):
        load({"master_server_address": "x:1", "tenant_id": "a\0b"})
