import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe } from 'node:test';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { ROOT } from './gateway.ts';
import { addConsoleUser, type ConsoleUserLogin } from './console.ts';
import { backends, startHarness, type Harness, type HarnessOptions } from './harness.ts';

export { addConsoleUser, PASSWORD, type ConsoleUserLogin } from './console.ts';

/**
 * The web console in a real browser: Debian's Chromium (`apt-get install chromium`; CHROMIUM_PATH for another one),
 * driven by playwright-core, against a service listening on a port of its own with the sandbox authority beside it
 * and the two platforms of the harness, each with a console user. No browser is downloaded: without a Chromium
 * binary the suites are skipped, saying so.
 */

const CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome', '/usr/bin/google-chrome-stable'];

/** The Chromium to drive: CHROMIUM_PATH when set (it must exist), else the first of the usual places that does. */
export function chromiumPath(): string | undefined {
  const chosen = process.env.CHROMIUM_PATH;
  if (chosen) return fs.existsSync(chosen) ? chosen : undefined;
  return CANDIDATES.find((candidate) => fs.existsSync(candidate));
}

/** Where the screenshots of a run go (git-ignored): look at them. */
export const SCREENSHOTS = path.join(ROOT, 'test-results', 'console');

export type ConsoleHarness = Harness & {
  /** http://127.0.0.1:PORT, where the service listens. */
  base: string;
  browser: Browser;
  /** A console user of platform A, and one of platform B. */
  userA: ConsoleUserLogin;
  userB: ConsoleUserLogin;
  /** A fresh browser context (no cookies) and its page; `width` 390 for a phone. */
  newPage(options?: { width?: number; height?: number }): Promise<Page>;
  /** Signs in through the form and waits for the console's first page. */
  signIn(page: Page, user: ConsoleUserLogin): Promise<void>;
  /** A full-page screenshot, test-results/console/<backend>-<name>.png. */
  screenshot(page: Page, name: string): Promise<string>;
};

/**
 * Runs `suite` against a console in Chromium, once for each backend; skipped (with the reason) when no Chromium is
 * installed. The service runs its webhooks (WEBHOOK_ALLOW_PRIVATE_URLS=true: receivers on 127.0.0.1).
 */
export function describeConsole(name: string, suite: (h: ConsoleHarness) => void, options: HarnessOptions = {}): void {
  const executablePath = chromiumPath();
  if (executablePath === undefined) {
    const where = process.env.CHROMIUM_PATH ? `CHROMIUM_PATH=${process.env.CHROMIUM_PATH} does not exist` : `none of ${CANDIDATES.join(', ')} exists`;
    describe(name, { skip: `no Chromium to drive (${where}): install Debian's with apt-get install chromium, or set CHROMIUM_PATH` }, () => undefined);
    return;
  }
  for (const backend of backends()) {
    describe(`${name} [${backend}]`, () => {
      let started: ConsoleHarness | undefined;
      let stop: (() => Promise<void>) | undefined;
      const contexts = new Set<BrowserContext>();
      const proxy = new Proxy({} as ConsoleHarness, {
        get(_target, property) {
          if (!started) throw new Error('the console harness is not started yet');
          return started[property as keyof ConsoleHarness];
        },
      });
      before(async () => {
        const harness = await startHarness(backend, { ...options, env: { WEBHOOK_ALLOW_PRIVATE_URLS: 'true', ...options.env } });
        let browser: Browser | undefined;
        try {
          await harness.service.app.listen({ port: 0, host: '127.0.0.1' });
          const address = harness.service.app.server.address();
          assert.ok(address !== null && typeof address === 'object');
          const base = `http://127.0.0.1:${address.port}`;
          browser = await chromium.launch({ executablePath, headless: true, args: ['--no-sandbox'] });
          const userA = await addConsoleUser(harness, harness.platformA.id, `ops-${backend}@platform-a.example`);
          const userB = await addConsoleUser(harness, harness.platformB.id, `ops-${backend}@platform-b.example`);
          fs.mkdirSync(SCREENSHOTS, { recursive: true });
          const launched = browser;
          started = {
            ...harness,
            base,
            browser: launched,
            userA,
            userB,
            async newPage(size: { width?: number; height?: number } = {}) {
              const context = await launched.newContext({
                baseURL: base,
                viewport: { width: size.width ?? 1440, height: size.height ?? (size.width !== undefined && size.width < 600 ? 844 : 860) },
                // Times are shown in the browser's zone: a fixed one, so that screenshots read the same everywhere.
                timezoneId: 'Asia/Kolkata',
                locale: 'en-IN',
              });
              // A page that does not come within 30 s (a loaded machine: a download built on the embedded database) will not
              // come: fail with the locator, not the test's timeout.
              context.setDefaultTimeout(30_000);
              contexts.add(context);
              return context.newPage();
            },
            async signIn(page: Page, user: ConsoleUserLogin) {
              await page.goto('/console/sign-in');
              await page.getByLabel('E-mail').fill(user.email);
              await page.getByLabel('Password').fill(user.password);
              await page.getByRole('button', { name: 'Sign in' }).click();
              await page.waitForURL((url) => !url.pathname.startsWith('/console/sign-in'));
            },
            async screenshot(page: Page, shot: string) {
              const file = path.join(SCREENSHOTS, `${backend}-${shot}.png`);
              try {
                await page.screenshot({ path: file, fullPage: true });
              } catch (error) {
                // Chromium now and then refuses one capture outright and takes the same picture when asked again
                // (seen once in clean-clone CI, on a 1,455-pixel page); asked once more, on that refusal only.
                if (!String((error as Error).message).includes('Unable to capture screenshot')) throw error;
                await page.waitForTimeout(250);
                await page.screenshot({ path: file, fullPage: true });
              }
              return file;
            },
          };
          stop = async () => {
            for (const context of contexts) await context.close().catch(() => undefined);
            await launched.close();
            await harness.stop();
          };
        } catch (error) {
          await browser?.close().catch(() => undefined);
          await harness.stop();
          throw error;
        }
      });
      after(async () => {
        await stop?.();
      });
      suite(proxy);
    });
  }
}

/**
 * On a phone each table row is a card of label / value lines, the label in a column of its own (`td::before`): the
 * labels (visible ones) whose text is wider than that column, which would touch or run under their value.
 */
export async function cardLabelsTooWide(page: Page): Promise<string[]> {
  return page.evaluate(`(() => {
    const found = [];
    const probe = document.createElement('span');
    probe.style.position = 'absolute';
    probe.style.visibility = 'hidden';
    probe.style.whiteSpace = 'nowrap';
    document.body.append(probe);
    for (const cell of document.querySelectorAll('table.list td[data-label]')) {
      if (cell.offsetParent === null) continue;
      const label = getComputedStyle(cell, '::before');
      if (label.content === 'none' || label.position !== 'absolute') continue;
      probe.style.font = label.font;
      probe.textContent = cell.getAttribute('data-label');
      const room = parseFloat(label.width) - parseFloat(label.paddingRight);
      if (probe.getBoundingClientRect().width > room) found.push(probe.textContent);
    }
    probe.remove();
    return [...new Set(found)];
  })()`);
}
