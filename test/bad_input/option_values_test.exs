defmodule ExZarr.BadInput.OptionValuesTest do
  @moduledoc """
  Every option of the public functions, given values of every wrong kind (negative, huge,
  floats, strings, atoms, tuples, maps, pids, references, invalid UTF-8): the call returns
  `:ok`, `{:ok, _}` or `{:error, _}` (a stream may raise `ExZarr.Error`), never another
  raise, exit or throw. Values are checked where they enter, not where they are first used.
  """
  use ExUnit.Case, async: true

  alias ExZarr.{Array, Group}

  @values [nil, -1, 0, 1.5, 2 ** 64, "x", :atom, {}, {1}, [1], %{}, %{a: 1}, [a: 1], true] ++
            [:infinity, <<0xFF>>]

  @create_keys [:shape, :chunks, :dtype, :zarr_format, :fill_value, :compressor, :filters] ++
                 [:order, :endian, :codecs, :chunk_key_encoding, :dimension_separator] ++
                 [:attributes, :dimension_names, :shards, :prefix, :write_empty_chunks] ++
                 [:overwrite, :table, :table_name, :owner]

  @array_keys [:start, :stop, :max_concurrency, :timeout, :coalesce_gap, :parallel, :ordered] ++
                [:level]

  @node_keys [:zarr_format, :use_consolidated, :prefix, :write_empty_chunks, :attributes] ++
               [:overwrite, :recursive]

  # The values a hostile caller picks, plus a pid and a reference (not module attributes).
  defp values, do: @values ++ [self(), make_ref()]

  defp assert_returns(label, fun) do
    result =
      try do
        fun.()
      rescue
        e in ExZarr.Error -> {:error, e}
        e -> flunk("#{label} raised #{inspect(e.__struct__)}: #{Exception.message(e)}")
      catch
        kind, value -> flunk("#{label}: #{kind} #{inspect(value, limit: 5)}")
      end

    assert result == :ok or match?({tag, _} when tag in [:ok, :error], result),
           "#{label} returned #{inspect(result, limit: 5)}"
  end

  test "create, with either format and an in-memory store" do
    for format <- [2, 3], backend <- [:memory, :ets], key <- @create_keys, value <- values() do
      base = [storage: backend, zarr_format: format, shape: {4}, chunks: {2}, dtype: :int32]
      label = "create(v#{format}, #{backend}, #{key}: #{inspect(value)})"
      assert_returns(label, fn -> ExZarr.create(Keyword.put(base, key, value)) end)
    end
  end

  test "the array functions, on plain, sharded and string arrays" do
    arrays =
      for opts <- [[dtype: :int32], [dtype: :int32, shards: {2, 2}], [dtype: :string]] do
        {:ok, a} = ExZarr.create([storage: :memory, shape: {4, 4}, chunks: {1, 1}] ++ opts)
        a
      end

    calls = [
      get_slice: &Array.get_slice(&1, &2),
      set_slice: &Array.set_slice(&1, <<0::512>>, &2),
      read_chunk: &Array.read_chunk(&1, {0, 0}, &2),
      chunk_stream: &{:ok, Enum.take(Array.chunk_stream(&1, &2), 2)},
      resize: &Array.resize(&1, {4, 4}, &2),
      append: &Array.append(&1, <<>>, 0, &2)
    ]

    for a <- arrays, {name, call} <- calls, key <- @array_keys, value <- values() do
      label = "#{name}(#{inspect(a.metadata.dtype)}, #{key}: #{inspect(value)})"
      assert_returns(label, fn -> call.(a, [{key, value}]) end)
    end
  end

  test "open, groups and their members" do
    {:ok, a} = ExZarr.create(storage: :memory, shape: {2})

    for key <- @node_keys, value <- values() do
      {:ok, g} = ExZarr.create_group(storage: :memory)
      opt = [{key, value}]
      label = "(#{key}: #{inspect(value)})"
      assert_returns("open" <> label, fn -> ExZarr.open([storage: a.storage] ++ opt) end)

      assert_returns("open_group" <> label, fn -> ExZarr.open_group([storage: :memory] ++ opt) end)

      assert_returns("create_group" <> label, fn ->
        ExZarr.create_group([storage: :memory] ++ opt)
      end)

      assert_returns("members" <> label, fn -> Group.members(g, opt) end)

      assert_returns("create_array" <> label, fn ->
        Group.create_array(g, "a", [shape: {2}] ++ opt)
      end)

      assert_returns("Group.create_group" <> label, fn -> Group.create_group(g, "b", opt) end)
      assert_returns("Group.open" <> label, fn -> Group.open(g, "b", opt) end)
      assert_returns("tree" <> label, fn -> ExZarr.tree([storage: :memory] ++ opt) end)
    end
  end
end

defmodule ExZarr.BadInput.DuplicateOptionsTest do
  @moduledoc """
  An option given twice is `{:error, {:duplicate_option, key}}` from every public function
  that takes options (one of the values would be silently dropped, and functions did not
  agree on which: create took the last dtype, the jobs the first retries).
  """
  use ExUnit.Case, async: true

  alias ExZarr.{Array, Group}

  test "create, open, groups, array calls and caches refuse an option given twice" do
    base = [storage: :memory, shape: {4}, chunks: {2}]

    assert {:error, {:duplicate_option, :dtype}} =
             ExZarr.create(base ++ [dtype: :int32, dtype: :int8])

    assert {:error, {:duplicate_option, :zarr_format}} =
             ExZarr.create([zarr_format: 2] ++ base ++ [zarr_format: 3])

    {:ok, a} = ExZarr.create(base ++ [dtype: :int32])

    assert {:error, {:duplicate_option, :storage}} =
             ExZarr.open(storage: a.storage, storage: :memory)

    assert {:error, {:duplicate_option, :start}} = Array.get_slice(a, start: {0}, start: {1})

    assert {:error, {:duplicate_option, :stop}} =
             Array.set_slice(a, <<0::32>>, stop: {1}, start: {0}, stop: {2})

    assert {:error, {:duplicate_option, :timeout}} =
             Array.get_orthogonal(a, {0}, timeout: 5, timeout: 10)

    assert {:error, {:duplicate_option, :max_concurrency}} =
             Array.set_coordinates(a, [{0}], <<0::32>>, max_concurrency: 1, max_concurrency: 2)

    assert_raise ExZarr.Error, ~r/duplicate_option/, fn ->
      Array.get_slice!(a, start: {0}, start: {1})
    end

    assert {:error, {:duplicate_option, :storage}} =
             ExZarr.create_group(storage: :memory, storage: :ets)

    {:ok, g} = ExZarr.create_group(storage: :memory)

    assert {:error, {:duplicate_option, :shape}} =
             Group.create_array(g, "x", shape: {2}, shape: {3})

    assert {:error, {:duplicate_option, :max_bytes}} =
             ExZarr.ChunkCache.start_link(name: :dup_cache, max_bytes: 10, max_bytes: 20)

    assert Array.get_slice(a) == {:ok, <<0::128>>}
  end

  test "a key given twice inside an option's map (as an atom and a string), or unknown there" do
    base = [storage: :memory, shape: {4}, chunks: {2}, dtype: :int32]

    for {key, value} <- [
          compressor: %{:id => "zstd", "id" => "gzip"},
          compressor: %{:id => "zstd", :level => 1, "level" => 5},
          attributes: %{:a => 1, "a" => 2},
          attributes: %{"x" => %{:a => 1, "a" => 2}},
          chunk_key_encoding: %{:name => "default", "name" => "v2"},
          chunk_key_encoding: %{name: "default", separator: "/", sep: "."},
          chunk_key_encoding: %{name: "default", configuration: %{separator: "."}}
        ] do
      assert {:error, {:invalid_option, ^key, _}} =
               ExZarr.create([zarr_format: 3] ++ base ++ [{key, value}])
    end

    # the separator given twice, differently
    assert {:error, {:invalid_option, :dimension_separator, "."}} =
             ExZarr.create(
               base ++
                 [
                   chunk_key_encoding: %{name: "default", separator: "/"},
                   dimension_separator: "."
                 ]
             )

    # controls
    assert {:ok, a} =
             ExZarr.create(
               base ++
                 [
                   chunk_key_encoding: %{"name" => "default", separator: "."},
                   dimension_separator: "."
                 ]
             )

    assert a.metadata.chunk_key_encoding == %{name: "default", separator: "."}
    assert {:ok, _} = ExZarr.create(base ++ [compressor: %{"id" => "zstd", level: 1}])
  end
end
