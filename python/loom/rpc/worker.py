"""A Dask worker that fronts a loom-rpc-server (docs/rpc.md, "Device pools
on Dask"):

    python3 -m loom.rpc.worker dask://SCHEDULER:8786 --server HOST:PORT --device-key cpu-avx512 [--key FILE]

It runs wherever Python and Dask do (the device needs only the server)
and carries the Dask resource "loom-rpc:DEVICE_KEY"."""
import argparse
import sys


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m loom.rpc.worker", description=__doc__.split("\n")[0])
    p.add_argument("scheduler", help="the Dask scheduler: dask://HOST:PORT or tcp://HOST:PORT")
    p.add_argument("--server", required=True, help="the loom-rpc-server it fronts: HOST:PORT")
    p.add_argument("--device-key", required=True, help="what the server's device is, for the pool: cpu-avx512, pocl...")
    p.add_argument("--key", help="the server's key file")
    p.add_argument("--name", help="the worker's name in the cluster")
    args = p.parse_args(argv)
    from . import RpcError
    from .dask_pool import serve
    try:
        serve(args.scheduler, args.server, key=args.key, device_key=args.device_key, name=args.name)
    except (RpcError, OSError) as e:
        print(f"loom.rpc.worker: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
