defmodule ExZarr.BenchSmokeTest do
  # Runs `make bench`'s smallest configuration end to end (ExZarr and the Python peers on tiny
  # arrays) so that the harness cannot rot unnoticed. Two peers keep it under ~20 s; zarrs runs
  # through the same zarr-python adapter code as zarr-python itself.
  use ExUnit.Case, async: false

  import ExUnit.CaptureIO

  Code.require_file("bench/load.exs", File.cwd!())

  # About 20 s on an idle machine; on a shared, loaded one it has taken 80 s.
  @moduletag timeout: 300_000

  setup do
    dir = ExZarr.Test.Tmp.path("exzarr_bench_smoke_")
    on_exit(fn -> File.rm_rf!(dir) end)
    {:ok, dir: dir}
  end

  test "the smoke profile runs every workload and writes the report", %{dir: dir} do
    out = Path.join(dir, "results")
    opts = [smoke: true, peers: "zarrs,tensorstore", data: dir, out: out]
    log = capture_io(fn -> send(self(), {:result, ExZarr.Bench.run(opts)}) end)
    assert_received {:result, {:ok, %{md: md, json: json, png: png, sections: sections}}}

    assert Enum.map(sections, & &1.id) == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]
    assert File.exists?(png)
    report = File.read!(md)
    assert report =~ "## 1. Single-chunk float64 array"
    refute report =~ "MISMATCH"
    refute log =~ "failed:"

    results = :jiffy.decode(File.read!(json), [:return_maps])

    for %{"status" => "ok", "tables" => tables, "id" => id} <- results["workloads"],
        %{"rows" => rows, "columns" => columns} <- tables,
        # workload 12's tables against Dask and Cubed have a column per engine (below)
        "ExZarr" in columns or id != 12,
        row <- rows,
        lib <- ["ExZarr" | columns -- ["ExZarr"]],
        lib in ["ExZarr", "zarrs", "tensorstore"],
        # zarrs has no cache of its own (workload 8)
        not (lib == "zarrs" and String.starts_with?(row["label"], "cache")),
        # zarrs (strict) selects no steps, oindex or vindex (workload 9)
        not (lib == "zarrs" and id == 9),
        # tensorstore has neither pcodec nor zfp, zarrs no zfp (workload 4)
        not (id == 4 and lib == "tensorstore" and row["label"] =~ ~r/^(pcodec|zfpy)/),
        not (id == 4 and lib == "zarrs" and String.starts_with?(row["label"], "zfpy")) do
      assert is_number(row["values"][lib]), "no #{lib} value in #{inspect(row)}"
    end

    # Workload 12 times ExZarr on 1 and 2 nodes, Dask and Cubed (and rechunker, in its own zarr 2
    # venv, for the rechunk only), and ExZarr, Dask and rechunker with a worker killed, and
    # measures the peak memory of every process: on the filesystem, and on MinIO when it is
    # installed.
    %{"tables" => [_ | engines]} = Enum.find(results["workloads"], &(&1["id"] == 12))
    assert length(engines) in [2, 4]
    every = ["ExZarr, 1 node", "ExZarr, 2 :peer nodes", "Dask, 2 workers", "Cubed, 2 processes"]
    killed = ["ExZarr, 2 :peer nodes", "Dask, 2 workers"]
    rechunker = "rechunker, Dask 2 workers"

    # Dask may fail a job whose worker is killed (its P2P rechunk raised P2PConsistencyError
    # once under load): then the table's notes say so instead of a time.
    for %{"rows" => rows} = table <- engines,
        %{"label" => label, "values" => values} <- rows,
        cols = if(label =~ "killed", do: killed, else: every),
        col <- if(label =~ ~r/^rechunk/, do: [rechunker | cols], else: cols),
        not (col == "Dask, 2 workers" and label =~ "killed" and failed_note?(table)) do
      assert is_number(values[col]), "no #{col} value in workload 12's #{label}"
    end

    # Workloads that need a codec ExZarr lacks say why they were skipped.
    for %{"status" => "skipped"} = w <- results["workloads"],
        do: assert(w["reason"] =~ "needs" or w["id"] == 5)

    # Workload 1 always has its uncompressed rows, with memory measured for every library.
    [single | _] = results["workloads"]
    [time, copies] = single["tables"]

    assert Enum.map(time["rows"], & &1["label"]) |> Enum.take(2) == [
             "write, uncompressed",
             "read, uncompressed"
           ]

    assert Enum.all?(copies["rows"], &is_number(&1["values"]["ExZarr (BEAM alloc)"]))
  end

  defp failed_note?(%{"notes" => notes}),
    do: Enum.any?(notes, &(&1 =~ ~r/^Failed: .*dask \w+, 1 worker killed/))

  test "bad options are refused with a message" do
    assert {:error, msg} = ExZarr.Bench.run(peers: "numpy")
    assert msg =~ "unknown peers"
    assert {:error, msg} = ExZarr.Bench.run(only: "one")
    assert msg =~ "--only"
  end
end
