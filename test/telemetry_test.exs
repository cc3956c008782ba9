defmodule ExZarr.TelemetryTest do
  # Handlers are global: no other test may emit while these run.
  use ExUnit.Case, async: false

  alias ExZarr.{Array, Storage}
  alias ExZarr.Test.PlainStore

  @moduletag :tmp_dir

  @spans [[:ex_zarr, :array, :read], [:ex_zarr, :array, :write], [:ex_zarr, :open]] ++
           [[:ex_zarr, :create], [:ex_zarr, :storage, :request]]
  @events for(span <- @spans, suffix <- [:start, :stop, :exception], do: span ++ [suffix]) ++
            [[:ex_zarr, :chunk_cache, :hit], [:ex_zarr, :chunk_cache, :miss]]

  setup context do
    test = self()
    id = {__MODULE__, context.test}

    :ok =
      :telemetry.attach_many(
        id,
        @events,
        fn event, measurements, metadata, _ ->
          send(test, {:event, event, measurements, metadata})
        end,
        nil
      )

    on_exit(fn -> :telemetry.detach(id) end)
  end

  defp events(kind) do
    receive do
      {:event, [:ex_zarr | _] = event, m, meta} when kind == :all or event == kind ->
        [{event, m, meta} | events(kind)]

      {:event, _other, _m, _meta} ->
        events(kind)
    after
      0 -> []
    end
  end

  defp flush, do: events(:all)

  test "a shared chunk cache tells each lookup: a miss, then hits carrying the chunk's bytes" do
    name = :"telemetry_cache_#{System.unique_integer([:positive])}"
    start_supervised!({ExZarr.ChunkCache, name: name, max_bytes: 1_000_000})

    {:ok, a} =
      ExZarr.create(
        shape: {4, 4},
        chunks: {4, 4},
        dtype: :uint8,
        compressor: nil,
        chunk_cache: name
      )

    :ok = Array.set_slice(a, :binary.copy(<<3>>, 16))
    {:ok, a} = ExZarr.open(storage: a.storage, chunk_cache: name)
    flush()

    {:ok, _} = Array.get_slice(a, start: {0, 0}, stop: {4, 4})
    {:ok, _} = Array.get_slice(a, start: {1, 1}, stop: {2, 2})

    cache_events =
      for {[:ex_zarr, :chunk_cache, outcome], m, meta} <- events(:all), do: {outcome, m, meta}

    assert [{:miss, %{count: 1}, %{cache: ^name, key: "c/0/0"}} | hits] = cache_events
    assert [_ | _] = hits
    assert Enum.all?(hits, &match?({:hit, %{count: 1, bytes: 16}, %{cache: ^name}}, &1))
    assert %{hits: h, misses: 1} = ExZarr.ChunkCache.stats(name)
    assert h == length(hits)
  end

  test "a read is one span whatever its chunks, with one storage request per chunk" do
    {:ok, a} = ExZarr.create(shape: {8, 8}, chunks: {2, 2}, dtype: :uint8, compressor: nil)
    :ok = Array.set_slice(a, :binary.copy(<<7>>, 64))
    flush()

    {:ok, bin} = Array.get_slice(a, start: {0, 0}, stop: {8, 8})
    all = events(:all)

    assert [
             {[:ex_zarr, :array, :read, :start], start_m, start_meta},
             {[:ex_zarr, :array, :read, :stop], stop_m, stop_meta}
           ] = for({[:ex_zarr, :array, :read, _], _, _} = e <- all, do: e)

    assert %{monotonic_time: t0, system_time: _} = start_m
    assert is_integer(t0)
    assert %{duration: d, bytes: 64} = stop_m
    assert is_integer(d) and d >= 0
    assert start_meta.array == a and start_meta.function == :get_slice
    assert start_meta.options == [start: {0, 0}, stop: {8, 8}]
    assert stop_meta.result == :ok
    assert stop_meta.telemetry_span_context == start_meta.telemetry_span_context
    assert byte_size(bin) == 64

    gets =
      for {[:ex_zarr, :storage, :request, :stop], m, %{operation: :get} = meta} <- all,
          do: {meta.key, m.bytes}

    assert length(gets) == 16
    assert Enum.all?(gets, fn {key, bytes} -> key =~ ~r"^c/\d/\d$" and bytes == 4 end)
  end

  test "a write reports the caller's bytes, and one put per chunk with its stored size" do
    {:ok, a} = ExZarr.create(shape: {4, 4}, chunks: {2, 4}, dtype: :uint16, compressor: nil)

    flush()
    data = for i <- 1..16, into: <<>>, do: <<i::16-little>>
    :ok = Array.set_slice(a, data)
    all = events(:all)

    assert [{_, %{bytes: 32}, %{function: :set_slice, result: :ok}}] =
             for({[:ex_zarr, :array, :write, :stop], _, _} = e <- all, do: e)

    puts =
      for {[:ex_zarr, :storage, :request, :stop], _, %{operation: :put} = meta} <- all, do: meta

    assert Enum.sort(Enum.map(puts, & &1.key)) == ["c/0/0", "c/1/0"]

    assert Enum.all?(puts, &(&1.backend == ExZarr.Storage.Memory))

    assert for(
             {[:ex_zarr, :storage, :request, :stop], %{bytes: b}, %{operation: :put}} <- all,
             do: b
           ) == [16, 16]

    :ok = Array.write_chunk(a, {1, 0}, :binary.copy(<<1>>, 16))

    assert [{_, %{bytes: 16}, %{function: :write_chunk, chunk: {1, 0}, result: :ok}}] =
             for({[:ex_zarr, :array, :write, :stop], _, _} = e <- events(:all), do: e)
  end

  test "failures end the span with result {:error, reason} and no bytes" do
    {:ok, a} = ExZarr.create(shape: {4}, chunks: {2}, dtype: :uint8, compressor: nil)
    flush()

    assert {:error, {:wrong_data_size, _}} = Array.set_slice(a, <<1, 2, 3>>)

    assert [{_, %{bytes: 0}, %{result: {:error, {:wrong_data_size, _}}}}] =
             for({[:ex_zarr, :array, :write, :stop], _, _} = e <- events(:all), do: e)

    assert {:error, :not_found} = Array.read_chunk(a, {1})

    all = events(:all)

    assert [{_, %{bytes: 0}, %{function: :read_chunk, chunk: {1}, result: {:error, :not_found}}}] =
             for({[:ex_zarr, :array, :read, :stop], _, _} = e <- all, do: e)

    assert [{_, %{bytes: 0}, %{key: "c/1", result: {:error, :not_found}}}] =
             for({[:ex_zarr, :storage, :request, :stop], _, %{operation: :get}} = e <- all, do: e)
  end

  test "storage requests: ranges, lists, deletes; a backend with get_ranges is one request", %{
    tmp_dir: dir
  } do
    {:ok, fs} = Storage.new(:filesystem, path: dir)
    {:ok, mem} = Storage.new(PlainStore, [])

    for store <- [fs, mem] do
      :ok = Storage.put(store, "x/k", "0123456789")
      {:ok, ["12", "89"]} = Storage.get_ranges(store, "x/k", [{1, 2}, {:suffix, 2}])
      {:ok, ["x/k"]} = Storage.list(store, "x")
      {:ok, _} = Storage.list_dir(store, "x")
      :ok = Storage.delete_prefix(store, "x")
    end

    all = for {[:ex_zarr, :storage, :request, :stop], m, meta} <- events(:all), do: {meta, m}
    summary = for {meta, m} <- all, do: {meta.backend, meta.operation, meta.key, m.bytes}

    fs_mod = ExZarr.Storage.Filesystem
    assert {fs_mod, :put, "x/k", 10} in summary
    assert {fs_mod, :get_ranges, "x/k", 4} in summary
    refute Enum.any?(summary, &match?({^fs_mod, :get, _, _}, &1))
    assert {fs_mod, :list, "x", 0} in summary
    assert {fs_mod, :delete_prefix, "x", 0} in summary

    # a backend without get_ranges: a get per range, a delete per key of the prefix
    assert Enum.count(summary, &(&1 == {PlainStore, :get, "x/k", 2})) == 2
    assert {PlainStore, :delete, "x/k", 0} in summary

    refute Enum.any?(
             summary,
             &match?({PlainStore, op, _, _} when op in [:get_ranges, :delete_prefix], &1)
           )
  end

  defmodule Exploding do
    @moduledoc false
    @behaviour ExZarr.Storage
    def init(_opts), do: {:ok, nil}
    def get(_s, _key, _range), do: raise("disk on fire")
    def put(_s, _key, _value), do: :ok
    def delete(_s, _key), do: :ok
    def list(_s, _prefix), do: {:ok, []}
    def supports_ranges?(_s), do: false
  end

  test "a request that raises ends its span with an exception event and raises on" do
    {:ok, store} = Storage.new(Exploding, [])
    flush()

    assert_raise RuntimeError, "disk on fire", fn -> Storage.get(store, "a") end

    assert [
             {[:ex_zarr, :storage, :request, :start], _, %{key: "a"}},
             {[:ex_zarr, :storage, :request, :exception], %{duration: d}, meta}
           ] = events(:all)

    assert is_integer(d)

    assert %{kind: :error, reason: %RuntimeError{}, stacktrace: [_ | _], backend: Exploding} =
             meta
  end

  test "open and create spans carry the path and the node, never other options", %{
    tmp_dir: dir
  } do
    path = Path.join(dir, "a.zarr")
    {:ok, a} = ExZarr.create(path: path, shape: {2}, dtype: :uint8)
    {:ok, g} = ExZarr.create_group(path: Path.join(dir, "g.zarr"))
    {:ok, b} = ExZarr.open(path)
    assert {:error, :not_found} = ExZarr.open_group(path: Path.join(dir, "none"))
    all = events(:all)

    stops = for {[:ex_zarr, kind, :stop], _, meta} <- all, kind in [:create, :open], do: meta

    assert [
             %{function: :create, path: ^path, node: ^a, result: :ok},
             %{function: :create_group, node: ^g},
             %{function: :open, path: ^path, node: ^b},
             %{function: :open_group, node: nil, result: {:error, :not_found}}
           ] = stops

    flush()
    secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"

    assert {:error, _} =
             ExZarr.open(
               path: "s3://bucket/a.zarr",
               endpoint: "http://127.0.0.1:1",
               access_key_id: "AKIDEXAMPLE",
               secret_access_key: secret,
               max_retries: 0
             )

    for {[:ex_zarr, :open, _], _, meta} <- events(:all) do
      assert meta.path == "s3://bucket/a.zarr"
      refute inspect(meta, limit: :infinity) =~ secret
    end
  end

  test "without a loaded :telemetry nothing is emitted and calls work the same" do
    {:ok, a} = ExZarr.create(shape: {4}, chunks: {2}, dtype: :uint8)
    flush()

    :code.purge(:telemetry)
    true = :code.delete(:telemetry)

    try do
      refute function_exported?(:telemetry, :span, 3)
      :ok = Array.set_slice(a, <<1, 2, 3, 4>>)
      assert {:ok, <<2, 3>>} = Array.get_slice(a, start: {1}, stop: {3})
      assert :ok = ExZarr.Telemetry.execute([:ex_zarr, :chunk_cache, :hit], %{count: 1}, %{})
    after
      :code.purge(:telemetry)
      {:module, :telemetry} = Code.ensure_loaded(:telemetry)
    end

    assert events(:all) == []
    assert {:ok, <<1, 2>>} = Array.get_slice(a, start: {0}, stop: {2})
    assert [_ | _] = events(:all)
  end
end
