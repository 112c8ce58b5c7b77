"""The master's status page at / of its admin port, in a real (headless) Chromium: its numbers
match /metrics after known puts, gets and removals, a chart updates, the console stays clean,
it says so when the master goes away and recovers when it is back, and with a pool secret it
asks for a token (which is nowhere in its source). Leaves a screenshot in $KVPOOL_ARTIFACTS_DIR
(default: the test's tmp dir)."""

from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import time
import urllib.request

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
if CHROMIUM is None or CHROMEDRIVER is None:
    pytest.skip("chromium / chromium-driver are not installed (scripts/install-deps.sh)",
                allow_module_level=True)
webdriver = pytest.importorskip("selenium.webdriver",
                                reason="python3-selenium is not installed")

import kvpool  # noqa: E402
from conftest import Pool, Proc, free_port, wait_for_port  # noqa: E402
from selenium.common.exceptions import StaleElementReferenceException  # noqa: E402

POLL_MS = 300


def metric(text: str, name: str, labels: str = "") -> int:
    m = re.search(rf"^{re.escape(name)}{re.escape(labels)} (\S+)$", text, re.M)
    assert m, f"{name}{labels} not in /metrics"
    return int(float(m.group(1)))


def fetch(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as r:
        return r.read().decode()


@pytest.fixture
def browser():
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    opts = Options()
    opts.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=1200,1000"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    try:
        yield driver
    finally:
        driver.quit()


def wait_for(pred, timeout=15.0, what="condition"):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def settled(read, attempts: int = 20):
    """read(), again while the page replaces what it found: it re-renders on its own clock, so an
    element found a moment ago may be gone when it is read (StaleElementReferenceException)."""
    for _ in range(attempts - 1):
        try:
            return read()
        except StaleElementReferenceException:
            time.sleep(0.05)
    return read()


def text(driver, element_id: str) -> str:
    return settled(lambda: driver.find_element("id", element_id).text)


def severe(driver) -> list:
    # A failed fetch while the master is down logs a network error: that one is expected.
    return [e for e in driver.get_log("browser") if e["level"] == "SEVERE"
            and "status.json" not in e["message"]]


def test_status_page_matches_metrics_and_survives_a_master_restart(browser, tmp_path):
    http = free_port()
    pool = Pool(metrics_port=http)
    store = kvpool.KVPoolStore()
    try:
        pool.add_node("64MB")
        assert store.setup("127.0.0.1", "P2PHANDSHAKE", 0, 0, "tcp", "",
                           pool.master_address) == 0, kvpool.last_error()
        for i in range(12):
            assert store.put(f"page/{i}", b"x" * 4096) == 0
        for i in range(3):
            assert store.remove(f"page/{i}") == 0
        for i in range(6):  # 3 misses (removed), 3 hits
            store.get(f"page/{i}")

        browser.get(f"http://127.0.0.1:{http}/?interval_ms={POLL_MS}")
        wait_for(lambda: text(browser, "conn").startswith("live"), what="the page to go live")

        def shown_and_metrics():
            # The page polls on its own clock: compare one of its refreshes with /metrics read
            # right after it, until a refresh and a read agree on every figure.
            m = fetch(f"http://127.0.0.1:{http}/metrics")
            pairs = [
                (text(browser, "objects"), metric(m, "kvpool_master_objects")),
                (text(browser, "get-hits"), metric(m, "kvpool_master_found_keys_total",
                                                   '{method="get_replica_list"}')),
                (text(browser, "put-keys"), metric(m, "kvpool_master_request_keys_total",
                                                   '{method="put_start"}')),
                (text(browser, "removed-keys"), metric(m, "kvpool_master_request_keys_total",
                                                       '{method="remove"}')),
                (text(browser, "clients"), metric(m, "kvpool_master_clients_alive")),
                (text(browser, "leases"), metric(m, "kvpool_master_leases_held")),
            ]
            return all(shown == str(value) for shown, value in pairs)
        wait_for(shown_and_metrics, what="the page's figures to match /metrics")
        assert text(browser, "objects") == "9"
        assert text(browser, "get-hits") == "3" and text(browser, "get-misses") == "3"
        rows = settled(lambda: [r.text for r in
                                browser.find_elements("css selector", "#segments tbody tr")])
        assert len(rows) == 1 and "DRAM" in rows[0], rows

        # A chart updates: more points, and the put rate shows the new puts.
        chart = browser.find_element("id", "chart-put")
        before = int(chart.get_attribute("data-points") or 0)
        for i in range(12, 40):
            assert store.put(f"page/{i}", b"y" * 4096) == 0
        wait_for(lambda: text(browser, "objects") == "37", what="37 objects")
        wait_for(lambda: int(chart.get_attribute("data-points") or 0) > before + 2,
                 what="the chart to gain points")
        rates = []  # the put rate of the poll that saw the new puts is above zero
        wait_for(lambda: rates.append(float(chart.get_attribute("data-max") or 0)) or
                 rates[-1] > 0, what="a put rate above zero")
        assert not severe(browser), severe(browser)
        out = pathlib.Path(os.environ.get("KVPOOL_ARTIFACTS_DIR", tmp_path))
        out.mkdir(parents=True, exist_ok=True)
        assert browser.save_screenshot(str(out / "status_page.png"))

        # The master goes away: the page says so; it comes back: the page recovers.
        store.close()
        store = None
        pool.master.stop()
        wait_for(lambda: "unreachable" in text(browser, "conn"), what="'unreachable'")
        pool.master = Proc(["master", "--rpc_port", str(pool.master_port), "--rpc_host",
                            "127.0.0.1", "--metrics_port", str(http)], "master")
        assert wait_for_port(http)
        wait_for(lambda: text(browser, "conn").startswith("live"), what="the page to recover")
        assert not severe(browser), severe(browser)
    finally:
        if store is not None:
            store.close()
        pool.stop()


def test_with_a_secret_the_page_asks_for_a_token(browser, tmp_path):
    secret = "s3cret-" + os.urandom(6).hex()
    f = tmp_path / "secret"
    f.write_text(secret)
    f.chmod(0o600)
    http = free_port()
    pool = Pool(master_flags=["--auth_secret_file", str(f)], metrics_port=http)
    try:
        page = fetch(f"http://127.0.0.1:{http}/")
        assert secret not in page and "<canvas" in page
        with pytest.raises(urllib.error.HTTPError) as e:
            fetch(f"http://127.0.0.1:{http}/status.json")
        assert e.value.code == 401
        browser.get(f"http://127.0.0.1:{http}/?interval_ms={POLL_MS}")
        wait_for(lambda: browser.find_element("id", "login").is_displayed(),
                 what="the token form")
        browser.find_element("id", "token").send_keys("wrong")
        browser.find_element("css selector", "#login button").click()
        wait_for(lambda: "refused" in text(browser, "login-error"), what="a refusal")
        browser.find_element("id", "token").send_keys(secret)
        browser.find_element("css selector", "#login button").click()
        wait_for(lambda: text(browser, "conn").startswith("live"), what="the page to go live")
        assert text(browser, "objects") == "0"
        assert secret not in browser.page_source.replace(
            browser.find_element("id", "token").get_attribute("value"), "")
    finally:
        pool.stop()


def test_node_status_page_matches_its_status(browser):
    pool = Pool()
    store = kvpool.KVPoolStore()
    try:
        node_http = free_port()
        pool.add_node("64MB", "--metrics_port", str(node_http))
        browser.get(f"http://127.0.0.1:{node_http}/?interval_ms={POLL_MS}")
        wait_for(lambda: text(browser, "conn").startswith("live"), what="the node page")
        assert store.setup("127.0.0.1", "P2PHANDSHAKE", 0, 0, "tcp", "",
                           pool.master_address) == 0, kvpool.last_error()
        for i in range(5):
            assert store.put(f"node-page/{i}", b"z" * 65536) == 0
        status = json.loads(fetch(f"http://127.0.0.1:{node_http}/status"))
        writes = str(status["data"]["write_requests"])
        wait_for(lambda: text(browser, "writes") == writes, what="write requests")
        assert text(browser, "master") == "reachable"
        assert text(browser, "capacity") == "64.0 MiB"
        chart = browser.find_element("id", "chart-bytes")
        wait_for(lambda: int(chart.get_attribute("data-points") or 0) >= 2, what="the chart")
        assert not severe(browser), severe(browser)
    finally:
        store.close()
        pool.stop()
