# Loads the benchmark harness modules (bench/lib) into the running VM; used by bench/run.exs
# and by test/bench/bench_smoke_test.exs. They are not part of the library, so they are not
# compiled into _build.
for file <- ~w(python memory table workload workloads/single_chunk workloads/slicing
               workloads/concurrency workloads/zstd_levels report bench) do
  Code.require_file("lib/#{file}.ex", __DIR__)
end
