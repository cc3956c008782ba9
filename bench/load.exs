# Compiles the benchmark harness (bench/lib) into _build/<env>/bench_ebin and loads it; used by
# bench/run.exs and test/bench/bench_smoke_test.exs. The harness is not part of the library, so
# it is not in the project's elixirc_paths; the fresh `elixir` processes of workload 1 put this
# directory on their code path instead of compiling it again.
ebin = Path.join(Mix.Project.build_path(), "bench_ebin")
File.mkdir_p!(ebin)

~w(python memory table workload workloads/single_chunk workloads/slicing workloads/concurrency
   workloads/zstd_levels workloads/sharded minio workloads/object_store nginx workloads/http
   workloads/chunk_cache workloads/selections workloads/bfloat16 workloads/telemetry_overhead
   workloads/rechunk workloads/rechunk_engines workloads/concurrent_writers workloads/limits
   report bench)
|> Enum.map(&Path.join([__DIR__, "lib", &1 <> ".ex"]))
|> Kernel.ParallelCompiler.compile_to_path(ebin)
|> case do
  {:ok, _modules, _warnings} -> Code.prepend_path(ebin)
  {:error, errors, _} -> raise "the bench harness does not compile: #{inspect(errors)}"
end
