#!/usr/bin/env python3
"""The tables and plots of a bench/scale.sh run.

Usage: scale_report.py DATA [PLOTDIR]

DATA is the run's tab-separated "N KEY VALUE" lines (N = 0 for what belongs to no count).
The tables go to stdout as Markdown, each figure checked against its target of issue 16.
With PLOTDIR (and matplotlib), it also writes PLOTDIR/scale-time.png (time per operation
against the agent count) and PLOTDIR/scale-memory.png (memory per agent), agt against pm2
and tmux.
"""

import collections
import math
import sys

GRACE = 2  # agt stop -t


def load(path):
    meta, per = {}, collections.defaultdict(dict)
    with open(path) as f:
        for line in f:
            n, key, value = line.rstrip("\n").split("\t", 2)
            (meta if n == "0" else per[int(n)])[key] = value
    return meta, dict(sorted(per.items()))


def num(d, key):
    """d[key] as a float, or None when missing or not a number."""
    try:
        v = float(d[key])
    except (KeyError, ValueError):
        return None
    return None if math.isnan(v) else v


def fmt(v, digits=1):
    if v is None:
        return "-"
    if abs(v) >= 100 or digits == 0:
        return f"{v:.0f}"
    return f"{v:.{digits}f}"


def verdict(ok):
    if ok is None:
        return ""
    return " (met)" if ok else " (**missed**)"


def table(head, rows):
    out = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def agt_rows(per):
    rows = []

    def row(name, target, cell):
        rows.append([name, target] + [cell(n, d) for n, d in per.items()])

    def spawned(n, d):
        k = num(d, "agt_spawned")
        return "-" if k is None else f"{k:.0f}" + ("" if k == n else " (limited)")

    row("agents spawned", "N", spawned)

    def ratio(ka, kb, limit):
        """The cell "A / B ms = Rx", met when R is at most limit."""

        def cell(n, d):
            a, b = num(d, ka), num(d, kb)
            if a is None or b is None:
                return "-"
            return f"{fmt(a)} / {fmt(b)} ms = {a / b:.2f}x{verdict(a / b <= limit)}"

        return cell

    row("`agt ps --json` / floor", "≤ 1.2x the floor", ratio("agt_ps_ms", "floor_ms", 1.2))

    def stopall(n, d):
        s, rc = num(d, "agt_stopall_s"), num(d, "agt_stopall_rc")
        if s is None:
            return "-"
        slow, nots = num(d, "agt_stopall_slowest_s"), num(d, "agt_stopall_not_stopped")
        left, later = num(d, "agt_stopall_left"), num(d, "agt_stopall_left_later")
        late = num(d, "agt_stopall_late")
        ok = rc == 0 and slow is not None and slow <= GRACE + 5 and nots == 0 and left == 0
        extra = f", {late:.0f} 'still runs'" if late else ""
        later = f" ({later:.0f} at {GRACE + 5} s)" if s < GRACE + 5 else ""
        return (f"{s:.1f} s, exit {rc:.0f}, slowest agent {fmt(slow)} s, {nots:.0f} not stopped{extra}, "
                f"{left:.0f} processes left{later}{verdict(ok)}")

    row(f"`agt stop -t {GRACE}s --all`", f"exit 0, each agent ≤ {GRACE + 5} s, nothing left", stopall)

    def reap(n, d):
        s, rc = num(d, "agt_reap_s"), num(d, "agt_reap_rc")
        if s is None:
            return "-"
        lost, got, left = num(d, "agt_reap_lost"), num(d, "agt_reap_reaped"), num(d, "agt_reap_left")
        ok = rc == 0 and s < 10 and got == lost and left == 0
        return f"{s:.2f} s, exit {rc:.0f}, {got:.0f} of {lost:.0f} reaped, {left:.0f} left{verdict(ok)}"

    row("`agt reap` over N lost agents", "< 10 s (at 1000)", reap)

    def stop1(n, d):
        m, mx = num(d, "agt_stop1_ms"), num(d, "agt_stop1_max_ms")
        return "-" if m is None else f"{fmt(m)} ms (max {fmt(mx)}){verdict(m <= 50)}"

    row("one `agt stop` while N run, median (max)", "≤ 50 ms", stop1)

    def pss(n, d):
        m, a = num(d, "agt_pss_med_kib"), num(d, "agt_pss_mean_kib")
        return "-" if m is None else f"{m / 1024:.2f} MiB (mean {a / 1024:.2f}){verdict(m <= 1536)}"

    row("supervisor PSS, median (mean)", "≤ 1.5 MiB median", pss)
    row("supervisor RSS, median", "-", lambda n, d: "-" if num(d, "agt_rss_med_kib") is None
        else f"{num(d, 'agt_rss_med_kib') / 1024:.2f} MiB")

    def wake(n, d):
        m, mx, busy = num(d, "agt_wake_med"), num(d, "agt_wake_max"), num(d, "agt_wake_busy")
        ino, k = num(d, "agt_inotify"), num(d, "agt_spawned")
        if m is None:
            return "-"
        return (f"{fmt(m)} / {fmt(mx)}; {busy:.0f} of {k:.0f} woke; {ino:.0f} held inotify"
                f"{verdict(busy == 0)}")

    row("idle wakeups a minute per supervisor, median / max", "0", wake)

    row("`agt spawn`: median of the last 10 / of the first 10", "≤ 1.1x (no slower, 10 % noise)",
        ratio("agt_spawn_last_ms", "agt_spawn_first_ms", 1.1))
    row("spawning all N, one after another", "-", lambda n, d: f"{fmt(num(d, 'agt_spawn_all_s'))} s")
    return rows


def side_rows(per):
    rows = []

    def row(name, cell):
        rows.append([name] + [cell(n, d) for n, d in per.items()])

    def ms(key):
        return lambda n, d: "-" if num(d, key) is None else f"{fmt(num(d, key))} ms"

    def s(key):
        return lambda n, d: "-" if num(d, key) is None else f"{fmt(num(d, key), 2)} s"

    row("list: `agt ps --json`", ms("agt_ps_ms"))
    row("list: `pm2 jlist`", ms("pm2_jlist_ms"))
    row("list: `tmux ls`", ms("tmux_ls_ms"))
    row("start one more: `agt spawn` (median of the last 10)", ms("agt_spawn_last_ms"))
    row("start one more: `pm2 start` of one process", ms("pm2_start1_ms"))
    row("start one more: `tmux new-session -d` (median of the last 10)", ms("tmux_new_last_ms"))
    row("start N: `agt spawn` N times", s("agt_spawn_all_s"))
    row("start N: `pm2 start` of an ecosystem file / until all online",
        lambda n, d: f"{fmt(num(d, 'pm2_start_s'), 2)} / {fmt(num(d, 'pm2_online_s'), 2)} s")
    row("start N: `tmux new-session -d` N times", s("tmux_new_all_s"))
    row("stop all: `agt stop -t 2s --all`", s("agt_stopall_s"))
    row("stop all: `pm2 stop all` (kill_timeout 2 s) / processes left",
        lambda n, d: f"{fmt(num(d, 'pm2_stopall_s'), 2)} s / {fmt(num(d, 'pm2_stopall_left'), 0)}")
    row("stop all: `tmux kill-server` / until every pane's process is gone / left",
        lambda n, d: f"{fmt(num(d, 'tmux_kill_ms'))} ms / {fmt(num(d, 'tmux_gone_s'), 2)} s / "
        f"{fmt(num(d, 'tmux_left'), 0)}")
    row("memory per agent: agt supervisor PSS, median", per_agent(lambda n, d: num(d, "agt_pss_med_kib")))
    row("memory per agent: pm2 daemon PSS / N", per_agent(lambda n, d: div(num(d, "pm2_pss_kib"), n)))
    row("memory per agent: tmux server PSS / N", per_agent(lambda n, d: div(num(d, "tmux_pss_kib"), n)))
    row("memory in all: agt supervisors' PSS summed", mib("agt_pss_sum_kib"))
    row("memory in all: pm2 daemon PSS (RSS)",
        lambda n, d: f"{mib('pm2_pss_kib')(n, d)} ({mib('pm2_rss_kib')(n, d)})")
    row("memory in all: tmux server PSS (RSS)",
        lambda n, d: f"{mib('tmux_pss_kib')(n, d)} ({mib('tmux_rss_kib')(n, d)})")
    return rows


def div(a, b):
    return None if a is None else a / b


def per_agent(f):
    return lambda n, d: "-" if f(n, d) is None else f"{fmt(f(n, d), 0)} KiB"


def mib(key):
    return lambda n, d: "-" if num(d, key) is None else f"{num(d, key) / 1024:.1f} MiB"


def event_rows(m):
    if num(m, "ev_sent") is None:
        return []
    g = lambda k: num(m, k)  # noqa: E731
    lost = g("ev_lost")
    rows = [
        ["events written (rate achieved)", f"{g('ev_sent'):.0f} in {g('ev_secs'):.1f} s ({g('ev_rate'):.0f}/s)", "-"],
        ["received by `agt tail -f` / lost / duplicated / out of order",
         f"{g('ev_received'):.0f} / {lost:.0f} / {g('ev_dups'):.0f} / {g('ev_out_of_order'):.0f}",
         "none lost" + verdict(lost == 0)],
        ["jumps in the events' seq / gap events (missed)",
         f"{g('ev_seq_jumps'):.0f} / {g('ev_gap_events'):.0f} ({g('ev_gap_missed'):.0f})", "-"],
        ["tail latency, line written → tail's reader got it: p50 / p99 / max",
         f"{g('ev_lat_p50_us') / 1000:.2f} / {g('ev_lat_p99_us') / 1000:.2f} / {g('ev_lat_max_ms'):.1f} ms",
         "p99 ≤ 2 ms" + verdict(g("ev_lat_p99_us") <= 2000)],
        ["of which to the supervisor's event timestamp: p50 / p99 / max",
         f"{g('ev_sup_p50_us') / 1000:.2f} / {g('ev_sup_p99_us') / 1000:.2f} / {g('ev_sup_max_ms'):.1f} ms", "-"],
        ["writes that blocked (slept: the pipe was full): count / longest",
         f"{g('ev_blocked'):.0f} / {g('ev_blocked_max_ms'):.2f} ms",
         "never blocked > 10 ms" + verdict(g("ev_blocked_max_ms") <= 10)],
        ["the agent's write(2), wall time, preemption included: p50 / p99 / max",
         f"{g('ev_write_p50_us'):.1f} µs / {g('ev_write_p99_us'):.1f} µs / {g('ev_write_max_ms'):.2f} ms",
         "-"],
        ["writes over 1 ms / over 10 ms (blocked or preempted)",
         f"{g('ev_writes_over_1ms'):.0f} / {g('ev_writes_over_10ms'):.0f}", "-"],
        ["furthest the writer fell behind its schedule", f"{g('ev_behind_max_ms'):.1f} ms", "-"],
        ["events.ndjson written", f"{g('ev_log_bytes') / 1e6:.1f} MB", "-"],
    ]
    return rows


def report(meta, per):
    print(f"agt at scale: {meta.get('meta', '')}  ")
    print(f"tools: {meta.get('tools', '')}  ")
    print(f"command: `{meta.get('command', '')}`  ")
    print(f"limits: {meta.get('limits', '')}  ")
    def ld(v):
        """ "load 1.5, 2.0, 3.1, runnable 4" -> "1.5, 2.0, 3.1 (4 runnable)" """
        v = v.removeprefix("load ")
        avg, _, run = v.partition(", runnable ")
        return f"{avg} ({run} runnable)" if run else avg

    print(f"load average (1, 5, 15 min): at the start {ld(meta.get('load_start', '-'))}"
          + (f"; events {ld(meta['load_events'])}" if "load_events" in meta else "")
          + f"; at the end {ld(meta.get('load_end', '-'))}")
    steps = ("load", "load_stop", "load_pm2", "load_tmux")
    print()
    print(table(["load at", "agt spawn", "agt stop --all", "pm2", "tmux"],
                [[f"{n} agents"] + [ld(d[k]) if k in d else "-" for k in steps] for n, d in per.items()]))
    for n, d in per.items():
        for k in ("skipped", "limited"):
            if k in d:
                print(f"\n**{n} agents: {k}:** {d[k]}")
    counts = [f"{n} agents" for n in per]
    print("\n#### agt against the targets of issue 16\n")
    print(table(["figure", "target"] + counts, agt_rows(per)))
    print("\n#### Side by side: agt, pm2, tmux\n")
    print(table(["operation"] + counts, side_rows(per)))
    ev = event_rows(meta)
    if ev:
        print("\n#### Events: one agent flooding, `agt tail -f` attached\n")
        print(table(["figure", "measured", "target"], ev))


def plots(meta, per, outdir):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ns = list(per)

    def series(f):
        xs, ys = [], []
        for n in ns:
            v = f(n, per[n])
            if v is not None:
                xs.append(n)
                ys.append(v)
        return xs, ys

    def line(ax, f, label, style):
        xs, ys = series(f)
        if xs:
            ax.plot(xs, ys, style, label=label)

    def key(k, scale=1.0):
        return lambda n, d: None if num(d, k) is None else num(d, k) * scale

    def save(fig, axes, path):
        """Log-log axes ticked at the counts, then the figure written to path."""
        for ax in axes:
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("agents")
            ax.set_xticks(ns)
            ax.set_xticklabels([str(n) for n in ns])
            ax.minorticks_off()
            ax.grid(True, which="both", alpha=0.3)
            if ax.get_legend() is None:
                ax.legend(fontsize=8, loc="best")
        fig.tight_layout()
        fig.savefig(path, dpi=90)

    agt, pm2, tmux = "o-C0", "s-C1", "^-C2"
    mid = math.sqrt(ns[0] * ns[-1])  # where target lines are labelled: between the counts
    fig, axs = plt.subplots(2, 2, figsize=(12, 9))
    title = f"agt at scale: {meta.get('meta', '')}"
    fig.suptitle(title, fontsize=10)
    ax = axs[0][0]
    line(ax, key("agt_ps_ms"), "agt ps --json", agt)
    line(ax, key("floor_ms"), "floor (read + decode every status.json)", "o:C0")
    line(ax, key("pm2_jlist_ms"), "pm2 jlist", pm2)
    line(ax, key("tmux_ls_ms"), "tmux ls", tmux)
    ax.set_title("list every agent")
    ax.set_ylabel("ms")
    ax = axs[0][1]
    line(ax, key("agt_spawn_last_ms"), "agt spawn (median of the last 10)", agt)
    line(ax, key("pm2_start1_ms"), "pm2 start (one more process)", pm2)
    line(ax, key("tmux_new_last_ms"), "tmux new-session -d (median of the last 10)", tmux)
    ax.set_title("start one more while N run")
    ax.set_ylabel("ms")
    ax = axs[1][0]
    line(ax, key("agt_stopall_s", 1000), "agt stop -t 2s --all", agt)
    line(ax, key("pm2_stopall_s", 1000), "pm2 stop all (kill_timeout 2 s)", pm2)
    line(ax, key("tmux_gone_s", 1000), "tmux kill-server, until every process is gone", tmux)
    ax.axhline((GRACE + 5) * 1000, color="grey", linestyle="--", linewidth=1)
    ax.text(mid, (GRACE + 5) * 1000 * 1.08, "target: grace + 5 s", fontsize=8, color="grey", ha="center")
    ax.set_title("stop all")
    ax.set_ylabel("ms")
    ax = axs[1][1]
    line(ax, key("agt_stop1_ms"), "one agt stop while N run (median)", agt)
    line(ax, key("agt_reap_s", 1000), "agt reap over N lost agents", "D-C3")
    ax.axhline(50, color="C0", linestyle="--", linewidth=1)
    ax.axhline(10000, color="C3", linestyle="--", linewidth=1)
    ax.text(mid, 55, "target: one stop ≤ 50 ms", fontsize=8, color="C0", ha="center")
    ax.text(mid, 11000, "target: reap of 1000 < 10 s", fontsize=8, color="C3", ha="center")
    ax.set_title("agt alone")
    ax.legend(fontsize=8, loc="center right")
    ax.set_ylabel("ms")
    save(fig, [a for r in axs for a in r], f"{outdir}/scale-time.png")

    fig, axs = plt.subplots(1, 2, figsize=(12, 4.8))
    fig.suptitle(title, fontsize=10)
    ax = axs[0]
    line(ax, key("agt_pss_med_kib"), "agt: one supervisor's PSS (median)", agt)
    line(ax, lambda n, d: div(num(d, "pm2_pss_kib"), n), "pm2: daemon PSS / N", pm2)
    line(ax, lambda n, d: div(num(d, "tmux_pss_kib"), n), "tmux: server PSS / N", tmux)
    ax.axhline(1536, color="C0", linestyle="--", linewidth=1)
    ax.text(mid, 1536 * 1.08, "target: 1.5 MiB", fontsize=8, color="C0", ha="center")
    ax.set_title("memory per agent (the agent's own process not counted)")
    ax.set_ylabel("KiB")
    ax = axs[1]
    line(ax, key("agt_pss_sum_kib", 1 / 1024), "agt: all supervisors' PSS", agt)
    line(ax, key("pm2_pss_kib", 1 / 1024), "pm2: daemon PSS", pm2)
    line(ax, key("tmux_pss_kib", 1 / 1024), "tmux: server PSS", tmux)
    ax.set_title("memory in all")
    ax.set_ylabel("MiB")
    save(fig, axs, f"{outdir}/scale-memory.png")


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    meta, per = load(sys.argv[1])
    report(meta, per)
    if len(sys.argv) == 3 and sys.argv[2] and per:
        plots(meta, per, sys.argv[2])


if __name__ == "__main__":
    main()
