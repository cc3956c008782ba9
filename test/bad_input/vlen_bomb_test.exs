defmodule ExZarr.BadInput.VlenBombTest do
  @moduledoc """
  Compressed chunks of variable-length arrays, whose decoded size is not known in advance, that
  inflate far beyond what their items can need: decoding stops at
  `ExZarr.Limits.vlen_decoded_bytes/1` with `{:error, _}` for every compressor, chunks under
  the limit still read, and no more chunks are decoded at once than memory holds at that size.
  Not async: it lowers the `:max_vlen_chunk_bytes` and `:max_bytes` settings.
  """
  use ExUnit.Case, async: false

  alias ExZarr.{Array, Limits, Storage}

  @limit 1024 * 1024

  defmodule InFlightStore do
    @moduledoc """
    A store in an ETS table whose reads take 20 ms and count how many run at once (counter
    slot 1: now, slot 2: the most so far). It says it is remote, so its reads run in parallel.
    """
    @behaviour ExZarr.Storage

    @impl true
    def init(opts) do
      {:ok, %{table: :ets.new(:in_flight, [:public]), counter: Keyword.fetch!(opts, :counter)}}
    end

    @impl true
    def get(%{table: t, counter: c}, key, range) do
      :counters.add(c, 1, 1)
      if :counters.get(c, 1) > :counters.get(c, 2), do: :counters.put(c, 2, :counters.get(c, 1))
      Process.sleep(20)
      :counters.sub(c, 1, 1)

      case :ets.lookup(t, key) do
        [{^key, value}] -> {:ok, slice(value, range)}
        [] -> {:error, :not_found}
      end
    end

    defp slice(value, nil), do: value

    defp slice(value, {:suffix, n}),
      do: binary_part(value, max(byte_size(value) - n, 0), min(n, byte_size(value)))

    defp slice(value, {offset, n}),
      do:
        binary_part(
          value,
          min(offset, byte_size(value)),
          min(n, max(byte_size(value) - offset, 0))
        )

    @impl true
    def put(%{table: t}, key, value),
      do: {:ets.insert(t, {key, IO.iodata_to_binary(value)}), :ok} |> elem(1)

    @impl true
    def delete(%{table: t}, key), do: {:ets.delete(t, key), :ok} |> elem(1)
    @impl true
    def list(%{table: t}, prefix),
      do: {:ok, for({k, _} <- :ets.tab2list(t), String.starts_with?(k, prefix), do: k)}

    @impl true
    def supports_ranges?(_s), do: false
    @impl true
    def io_concurrency(_s), do: 16
  end

  setup do
    saved =
      for key <- [:max_vlen_chunk_bytes, :max_bytes],
          do: {key, Application.get_env(:ex_zarr, key)}

    Application.put_env(:ex_zarr, :max_vlen_chunk_bytes, @limit)

    on_exit(fn ->
      for {key, value} <- saved do
        if value,
          do: Application.put_env(:ex_zarr, key, value),
          else: Application.delete_env(:ex_zarr, key)
      end
    end)
  end

  @compressors [
    %{id: "zstd", level: 1},
    %{id: "gzip", level: 1},
    %{id: "zlib", level: 1},
    %{id: "bz2", level: 1},
    %{id: "lz4"},
    %{id: "blosc", cname: "zstd", clevel: 1, shuffle: 0},
    %{id: "lzma", preset: 1}
  ]

  # The stored chunk of four items, the first one `size` bytes, compressed as the array does.
  defp chunk(a, size) do
    items = [:binary.copy("x", size), "b", "c", "d"]
    layout = ExZarr.Test.Codecs.vlen_layout(items)

    [{module, state}] = a.pipeline.bytes_to_bytes
    {:ok, encoded} = module.encode(layout, state)
    {items, IO.iodata_to_binary(encoded)}
  end

  for compressor <- @compressors do
    test "#{compressor.id}: a chunk inflating past the limit is an error, one under it reads" do
      {:ok, a} =
        ExZarr.create(
          shape: {8},
          chunks: {4},
          dtype: :bytes,
          storage: :memory,
          compressor: unquote(Macro.escape(compressor))
        )

      {_items, bomb} = chunk(a, 8 * @limit)
      assert byte_size(bomb) < div(@limit, 8)
      :ok = Storage.put(a.storage, "c/0", bomb)
      {small, fits} = chunk(a, div(@limit, 2))
      :ok = Storage.put(a.storage, "c/1", fits)

      assert {:error, {:corrupt_chunk, "c/0", {:decode, _, _}}} = Array.get_slice(a)
      assert {:error, _} = Array.read_chunk(a, {0})
      assert {:ok, ^small} = Array.get_slice(a, start: {4}, stop: {8})
    end
  end

  test "the limit is the layout of the chunk's items plus the setting (256 MiB by default)" do
    assert Limits.vlen_decoded_bytes(4) == 4 + 16 + @limit
    Application.delete_env(:ex_zarr, :max_vlen_chunk_bytes)
    assert Limits.max_vlen_chunk_bytes() == 256 * 1024 * 1024
  end

  test "a write whose items a chunk could not read back is refused, leaving the chunk as it was" do
    for opts <- [[], [shards: {8}], [zarr_format: 2]] do
      {:ok, a} =
        ExZarr.create([shape: {8}, chunks: {4}, dtype: :string, storage: :memory] ++ opts)

      :ok = Array.set_slice(a, ["a", "b", "c", "d"], start: {0}, stop: {4})
      big = :binary.copy("x", @limit + 1)
      limit = @limit

      assert {:error, {:too_large, :vlen_chunk, _, ^limit}} =
               Array.set_slice(a, [big], start: {1}, stop: {2})

      assert {:error, {:too_large, :vlen_chunk, _, ^limit}} =
               Array.set_slice(a, List.duplicate(:binary.copy("y", div(@limit, 3)), 4),
                 start: {4},
                 stop: {8}
               )

      assert {:ok, ["a", "b", "c", "d", "", "", "", ""]} = Array.get_slice(a)
      # at the limit: written and read back
      exact = :binary.copy("z", @limit - 3)
      :ok = Array.set_slice(a, [exact], start: {1}, stop: {2})
      assert {:ok, ["a", ^exact, "c", "d"]} = Array.get_slice(a, start: {0}, stop: {4})
    end
  end

  test "a sharded array's inner chunks are bounded too" do
    {:ok, a} =
      ExZarr.create(
        shape: {8},
        chunks: {4},
        shards: {8},
        dtype: :string,
        storage: :memory,
        compressor: %{id: "gzip", level: 1}
      )

    %{inner: inner} = elem(a.pipeline.array_to_bytes, 1)
    [{module, state}] = inner.bytes_to_bytes
    layout = ExZarr.Test.Codecs.vlen_layout([:binary.copy("x", 4 * @limit), "", "", ""])
    {:ok, bomb} = module.encode(layout, state)
    bomb = IO.iodata_to_binary(bomb)
    # a shard holding the bomb as its first inner chunk, built with the sharding codec
    s = elem(a.pipeline.array_to_bytes, 1)

    {:ok, {shard, _index, _stored}} =
      ExZarr.Codecs.ShardingIndexed.build_shard(s, [{0, bomb}, {1, nil}])

    :ok = Storage.put(a.storage, "c/0", IO.iodata_to_binary(shard))

    assert {:error, _} = Array.get_slice(a)
  end

  test "no more chunks are decoded at once than memory holds at the limit (reads and streams)" do
    counter = :counters.new(2, [:atomics])
    {:ok, store} = Storage.new(InFlightStore, counter: counter)

    {:ok, a} =
      ExZarr.create(
        shape: {64},
        chunks: {1},
        dtype: :string,
        storage: store,
        compressor: %{id: "zstd", level: 1}
      )

    :ok = Array.set_slice(a, for(i <- 0..63, do: "item #{i}"))

    # memory for two chunks at the limit
    Application.put_env(:ex_zarr, :max_bytes, 2 * Limits.vlen_decoded_bytes(1) + 1)
    :counters.put(counter, 2, 0)
    assert {:ok, items} = Array.get_slice(a, max_concurrency: 16)
    assert length(items) == 64
    assert :counters.get(counter, 2) == 2

    :counters.put(counter, 2, 0)
    assert length(Enum.to_list(Array.chunk_stream(a, parallel: 16))) == 64
    assert :counters.get(counter, 2) == 2

    # with memory to spare, the requested concurrency
    Application.delete_env(:ex_zarr, :max_bytes)
    :counters.put(counter, 2, 0)
    assert {:ok, _} = Array.get_slice(a, max_concurrency: 16)
    assert :counters.get(counter, 2) > 2
  end
end
