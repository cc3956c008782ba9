# `make bench` (MIX_ENV=prod mix run bench/run.exs $(BENCH_ARGS)): ExZarr side by side with
# zarr-python, zarr-python + zarrs and tensorstore. See bench/README.md and ExZarr.Bench.
Code.require_file("load.exs", __DIR__)
ExZarr.Bench.main(System.argv())
