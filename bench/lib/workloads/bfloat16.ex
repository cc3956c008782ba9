defmodule ExZarr.Bench.Workloads.Bfloat16 do
  @moduledoc """
  Workload 10: a bfloat16 field (the type of ML checkpoints; float64 rounded to bfloat16 by
  numpy's `ml_dtypes`), full write and full read, uncompressed and zstd 3, ExZarr against
  tensorstore (the peer here that writes bfloat16 in Zarr v3; zarr-python 3.1 has no such data
  type, so neither it nor zarrs through it has cells).
  """

  @behaviour ExZarr.Bench.Workload

  alias ExZarr.Bench.{Table, Workload}

  @peers ["tensorstore"]
  @compressors [{"uncompressed", nil}, {"zstd 3", %{"id" => "zstd", "level" => 3}}]
  @profiles %{
    default: %{shape: [4096, 4096], chunks: [512, 512], runs: 3},
    quick: %{shape: [2048, 2048], chunks: [512, 512], runs: 2},
    smoke: %{shape: [128, 128], chunks: [64, 64], runs: 1}
  }

  @impl true
  def id, do: 10

  @impl true
  def title, do: "bfloat16 field: full write and read (ExZarr and tensorstore)"

  @impl true
  def datasets(ctx), do: [dataset(Workload.config(ctx, @profiles).shape)]

  defp dataset(shape) do
    %{
      name: "bf16_#{Enum.join(shape, "x")}",
      kind: "field",
      shape: shape,
      dtype: "bfloat16",
      seed: 10
    }
  end

  @impl true
  def run(ctx) do
    conf = Workload.config(ctx, @profiles)
    libs = Enum.filter(ctx.libs, &(&1 == "ExZarr" or &1 in @peers))

    task = %{
      workload: "full_io",
      raw: Map.fetch!(ctx.data, dataset(conf.shape).name),
      shape: conf.shape,
      chunks: conf.chunks,
      dtype: "bfloat16",
      runs: conf.runs,
      compressors:
        Enum.map(@compressors, fn {name, c} -> %{name: name, compressor: c || :null} end)
    }

    results = Workload.each_lib(%{ctx | libs: libs}, "bfloat16", task, &exzarr/1)
    mb = Enum.product(conf.shape) * 2 / 1.0e6

    what =
      "#{Table.format(mb)} MB, #{Enum.join(conf.shape, " x ")} in #{Enum.join(conf.chunks, " x ")} chunks"

    table = Table.new("10. bfloat16 full write and read (#{what})", libs, unit: "ms")

    table =
      for {group, _} <- @compressors, op <- ["write", "read"], reduce: table do
        t -> Workload.time_row(t, results, group, op, "#{op}, #{group}")
      end

    {:ok,
     [
       Table.add_note(
         table,
         "zarr-python 3.1 has no bfloat16 data type: no zarr-python or zarrs cells."
       )
     ]}
  end

  # -- ExZarr side (mirrors `full_io` in bench/peers/peer.py) -----------------------------------

  defp exzarr(task) do
    data = File.read!(task.raw)

    rows =
      Enum.flat_map(task.compressors, fn %{name: group, compressor: comp} ->
        path = Path.join(task.store_root, group)
        write = fn -> Workload.create(path, task.shape, task.chunks, task.dtype, comp) end

        {writes, nil} =
          Workload.measure(task.runs, fn -> :ok = ExZarr.Array.set_slice(write.(), data) end,
            before: fn -> File.rm_rf!(path) end
          )

        array = ExZarr.open!(path: path)
        read = fn -> [ExZarr.Array.get_slice!(array)] end
        {reads, digest} = Workload.measure(task.runs, read, check: &Workload.digest/1)

        [
          %{group: group, op: "write", samples: writes, digest: nil, stored_bytes: nil},
          %{
            group: group,
            op: "read",
            samples: reads,
            digest: digest,
            stored_bytes: Workload.stored_bytes(path)
          }
        ]
      end)

    %{rows: rows}
  end
end
