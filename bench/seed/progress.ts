/**
 * A progress bar on stderr: redrawn in place on a terminal, one line per tenth otherwise (CI logs).
 */
const WIDTH = 30;

/** Tracks `done` out of `total` and draws rate and time left; `finish()` prints the final line. */
export function progressBar(label: string, total: number, stream: NodeJS.WriteStream = process.stderr) {
  const started = performance.now();
  const tty = stream.isTTY === true;
  let lastDraw = 0;
  let lastTenth = -1;
  const line = (done: number) => {
    const seconds = (performance.now() - started) / 1000;
    const rate = seconds > 0 ? done / seconds : 0;
    const left = rate > 0 ? (total - done) / rate : 0;
    const filled = total > 0 ? Math.round((done / total) * WIDTH) : WIDTH;
    const pct = total > 0 ? Math.floor((done / total) * 100) : 100;
    return (
      `${label} [${'#'.repeat(filled)}${'.'.repeat(WIDTH - filled)}] ${String(pct).padStart(3)}% ` +
      `${done.toLocaleString('en')}/${total.toLocaleString('en')} ` +
      `${Math.round(rate).toLocaleString('en')} rows/s, ${left.toFixed(0)} s left`
    );
  };
  return {
    update(done: number) {
      const now = performance.now();
      if (tty) {
        if (now - lastDraw < 100) return;
        lastDraw = now;
        stream.write(`\r${line(done)}\x1b[K`);
        return;
      }
      const tenth = total > 0 ? Math.floor((done / total) * 10) : 10;
      if (tenth === lastTenth) return;
      lastTenth = tenth;
      stream.write(`${line(done)}\n`);
    },
    finish(done: number) {
      stream.write(tty ? `\r${line(done)}\x1b[K\n` : `${line(done)}\n`);
    },
  };
}
