"""Headless Chromium as a user's browser (Debian's ``chromium`` and ``chromium-driver``, which
``make test`` installs when it may), with the network off: every request but those to this
machine goes to a proxy that is not there, so a page that needs a CDN shows it."""
from __future__ import annotations

import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional

import pytest

NO_NETWORK = "--proxy-server=http://127.0.0.1:9"  # localhost still bypasses the proxy


def chromium() -> Optional[str]:
    return next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None)


needs_chromium = pytest.mark.skipif(chromium() is None or shutil.which("chromedriver") is None,
                                    reason="Chromium or chromedriver not installed (make test installs "
                                           "Debian's chromium and chromium-driver with apt when run as root)")


class Browser:
    """A Selenium session that waits for what a person would wait to see."""

    def __init__(self, driver, screenshots: Path):
        self.driver = driver
        self.screenshots = screenshots

    def open(self, url: str, *, showing: str, timeout: float = 60) -> str:
        """Load ``url`` and wait until the page's text contains ``showing``; returns the text."""
        self.driver.get(url)
        return self.wait_for_text(showing, timeout)

    def wait_for_text(self, showing: str, timeout: float = 60) -> str:
        from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support.ui import WebDriverWait

        def text(driver):
            body = driver.find_element(By.TAG_NAME, "body").text
            return body if showing in body else False
        try:
            # the page may be replaced between finding its body and reading it (the login's redirect)
            return WebDriverWait(self.driver, timeout, ignored_exceptions=(StaleElementReferenceException,)).until(text)
        except TimeoutException:
            shot = self.screenshot("timeout")
            raise AssertionError(f"{self.driver.current_url} did not show {showing!r} within {timeout:g} s "
                                 f"(screenshot: {shot})") from None

    def log_in(self, url: str, user: str, password: str) -> None:
        """Through the Airflow UI's login form, as a person does, until the home page shows."""
        from selenium.webdriver.common.by import By

        self.open(url, showing="Sign")
        self.driver.find_element(By.CSS_SELECTOR, "input:not([type=password])").send_keys(user)
        self.driver.find_element(By.CSS_SELECTOR, "input[type=password]").send_keys(password)
        self.driver.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        self.wait_for_text("Dags")

    def open_plugin_view(self, entry: str, *, showing: str, timeout: float = 60) -> str:
        """Through the nav entry ``entry`` of a plugin's view, as a person does: the page it
        shows in the UI's frame, once that shows ``showing``; returns the frame's text and
        leaves the driver on the UI's page."""
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support import expected_conditions as EC
        from selenium.webdriver.support.ui import WebDriverWait

        self.wait_for_text(entry, timeout)  # once the UI has read the plugins
        (link,) = self.driver.find_elements(By.XPATH, f"//*[normalize-space(text())='{entry}']")
        link.click()
        WebDriverWait(self.driver, timeout).until(EC.frame_to_be_available_and_switch_to_it(
            (By.CSS_SELECTOR, f"iframe[title='{entry}']")))
        try:
            return self.wait_for_text(showing, timeout)
        finally:
            self.driver.switch_to.default_content()

    def screenshot(self, name: str) -> Path:
        self.screenshots.mkdir(parents=True, exist_ok=True)
        path = self.screenshots / f"{name}.png"
        self.driver.save_screenshot(str(path))
        return path


@contextmanager
def browser(screenshots: Path, width: int = 1400, height: int = 1000) -> Iterator[Browser]:
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = chromium()
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     f"--window-size={width},{height}", NO_NETWORK):
        options.add_argument(argument)
    # the driver named, so Selenium Manager neither looks for one online nor sends usage stats
    driver = webdriver.Chrome(options=options, service=Service(shutil.which("chromedriver")))
    try:
        yield Browser(driver, screenshots)
    finally:
        driver.quit()
