"""loomc tune (docs/tuning.md): python -m loom.tune MODEL.loom --config FILE --trials N --database FILE
[--workers local:N | dask://HOST:PORT [--device-key KEY]] [--strategy model|random] [--timeout S] [--seed N] [--verify N]."""
import argparse
import sys


def main(argv=None):
    parser = argparse.ArgumentParser(prog="loomc tune", description="Tunes the schedules of a model's prim "
                                     "functions and records them in a database (docs/tuning.md).")
    parser.add_argument("model", help="the model, a .loom file")
    parser.add_argument("--config", required=True, help="the YAML config the model is built with")
    parser.add_argument("--trials", type=int, required=True, help="candidates to measure, shared by the tasks")
    parser.add_argument("--database", required=True, help="the JSON-lines database the results are appended to")
    parser.add_argument("--workers", default="local:1", help="local:N (processes here) or dask://HOST:PORT")
    parser.add_argument("--device-key", help="measure on the loom-rpc-servers of this key in the Dask device pool "
                        "--workers names (docs/rpc.md)")
    parser.add_argument("--strategy", default="model", choices=("model", "random"))
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds one candidate may take")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--verify", type=int, default=3,
                        help="after each task, its N fastest traces and AutoSchedule's measured twice more")
    args = parser.parse_args(argv)
    import loom
    import loom.tune
    try:
        mod = loom.ir.load(args.model)
        results = loom.tune.tune(mod, args.config, trials=args.trials, database=args.database, workers=args.workers,
                                 strategy=args.strategy, seed=args.seed, timeout=args.timeout,
                                 verify=args.verify, device_key=args.device_key)
    except (loom.LoomError, OSError, ValueError) as e:
        print(f"loomc tune: {e}", file=sys.stderr)
        return 1
    print(f"{'task':32} {'hash':16} {'calls':>5} {'trials':>6} {'AutoSchedule':>13} {'tuned':>11} {'speed-up':>8}")
    for r in results:
        base, best = r["baseline_us"], r["best_us"]
        ratio = f"{base / best:.2f}x" if base and best else "-"
        print(f"{r['name'][:32]:32} {r['hash']} {r['calls']:5d} {r['trials']:6d} "
              f"{(f'{base:.1f} us' if base else '-'):>13} {(f'{best:.1f} us' if best else '-'):>11} {ratio:>8}")
    print(f"records appended to {args.database}; build with pipeline: {{tuning: {{database: {args.database}}}}}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
