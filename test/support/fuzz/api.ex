defmodule ExZarr.Fuzz.Api do
  @moduledoc """
  Generators of API arguments: `ExZarr.create/1` options (valid ones, the base of mutated
  cases, and hostile ones: unknown options, codec parameters out of range, huge dtypes and
  shapes) and the operations run on an opened node (see `ExZarr.Fuzz.Steps` for the specs).
  """
  import Bitwise
  import ExZarr.Fuzz.Gen

  alias ExZarr.Fuzz.Hostile

  @dtypes [
    :int32,
    :uint8,
    :float64,
    :bool,
    :int8,
    :int16,
    :int64,
    :uint16,
    :uint32,
    :uint64,
    :float16,
    :float32,
    :complex64,
    :complex128,
    :string,
    :bytes,
    {:fixed_bytes, 3},
    {:raw_bytes, 5},
    {:fixed_utf32, 2},
    {:datetime64, "ms", 1},
    {:timedelta64, "s", 10}
  ]

  @compressors [
    nil,
    %{id: "zstd", level: 1},
    %{id: "gzip", level: 1},
    %{id: "blosc", cname: "lz4", clevel: 5, shuffle: 1},
    %{id: "lz4"},
    %{id: "zlib", level: 1},
    %{id: "bz2", level: 1},
    %{id: "lzma", preset: 1},
    %{id: "blosc", cname: "zstd", clevel: 3, shuffle: 2},
    %{id: "adler32"},
    %{id: "crc32", location: "end"},
    %{id: "jenkins_lookup3", initval: 7}
  ]

  @huge [1 <<< 31, 3 <<< 30, 1 <<< 32, 1 <<< 40, (1 <<< 63) - 1, 1 <<< 63, 1 <<< 64]

  @doc "Options of `ExZarr.create/1` for a valid array (v2 or v3, sharded or not)."
  @spec valid_create() :: ExZarr.Fuzz.Gen.t()
  def valid_create do
    bind({elements([3, 2]), int(1, 3)}, fn {format, ndim} ->
      map(
        {elements(@dtypes), vector(ndim, int(0, 20)), vector(ndim, int(1, 8)),
         elements(@compressors), elements(["C", "F"]), elements([:little, :big]),
         sharding(format, ndim)},
        fn {dtype, shape, chunks, compressor, order, endian, grid} ->
          [
            zarr_format: format,
            dtype: dtype,
            shape: List.to_tuple(shape),
            compressor: compressor,
            order: order,
            endian: endian
          ] ++ chunking(chunks, grid, shape)
        end
      )
    end)
  end

  # A third of v3 arrays are sharded (the shard is the chunk times a small factor), a third
  # are on a rectilinear grid (axes given edges use them, the last edge reaching the end).
  defp sharding(3, ndim),
    do: oneof([nil, vector(ndim, int(1, 3)), {:edges, vector(ndim, list(int(1, 5), 0, 3))}])

  defp sharding(2, _ndim), do: nil

  defp chunking(chunks, nil, _shape), do: [chunks: List.to_tuple(chunks)]

  defp chunking(chunks, {:edges, edges}, shape) do
    axes =
      Enum.zip_with([chunks, edges, shape], fn
        [c, [], _n] -> c
        [_c, edges, n] -> edges ++ Enum.reject([n - Enum.sum(edges)], &(&1 <= 0))
      end)

    [chunks: List.to_tuple(axes)]
  end

  defp chunking(chunks, factors, _shape),
    do: [
      chunks: List.to_tuple(chunks),
      shards: chunks |> Enum.zip_with(factors, &(&1 * &2)) |> List.to_tuple()
    ]

  @doc "Options of `ExZarr.create/1` with one to three options made hostile or added."
  @spec hostile_create() :: ExZarr.Fuzz.Gen.t()
  def hostile_create do
    map({valid_create(), list(hostile_option(), 1, 3)}, fn {opts, changes} ->
      Enum.reduce(changes, opts, fn {key, value}, acc ->
        List.keystore(acc, key, 0, {key, value})
      end)
    end)
  end

  defp hostile_option do
    oneof([
      {:compressor, compressor()},
      {:filters, list(compressor(), 1, 2)},
      {:shape, shape()},
      {:chunks, shape()},
      {:shards, shape()},
      {:dtype, dtype()},
      {:fill_value, Hostile.term()},
      {:codecs, codecs()},
      {:attributes, attributes()},
      {:dimension_names, Hostile.term()},
      {:order, Hostile.term()},
      {:endian, Hostile.term()},
      {:zarr_format, Hostile.term()},
      {:chunk_key_encoding,
       oneof([Hostile.term(), elements(["v2", %{name: "default", separator: "\\"}])])},
      {:prefix, elements(["..", "../x", "/abs", "a/../..", "a//b", 123, :x, "a\u0000b"])},
      {elements([:chnks, :compresor, :shpe, :bogus]), Hostile.term()}
    ])
  end

  @doc "A numcodecs-style compressor map with parameters in and out of range, and unknown keys."
  @spec compressor() :: ExZarr.Fuzz.Gen.t()
  def compressor do
    params = %{
      "blosc" => [:cname, :clevel, :shuffle, :typesize, :blocksize],
      "zstd" => [:level, :checksum, :levle],
      "gzip" => [:level],
      "zlib" => [:level],
      "bz2" => [:level],
      "lz4" => [:acceleration],
      "lzma" => [:format, :check, :preset, :filters],
      "shuffle" => [:elementsize],
      "delta" => [:dtype, :astype],
      "bitround" => [:keepbits],
      "quantize" => [:digits, :dtype],
      "fixedscaleoffset" => [:scale, :offset, :dtype, :astype],
      "crc32" => [:location],
      "crc32c" => [:location],
      "adler32" => [:location],
      "fletcher32" => [:location],
      "jenkins_lookup3" => [:initval, :prefix],
      "pcodec" => ~w(level mode_spec delta_spec paging_spec delta_encoding_order
                     equal_pages_up_to)a,
      "zfpy" => [:mode, :tolerance, :rate, :precision, :compression_kwargs],
      "nope" => [:x]
    }

    bind(elements(Map.keys(params)), fn id ->
      map(list({elements(params[id]), param_value()}, 0, 3), &Map.new([{:id, id} | &1]))
    end)
  end

  defp param_value do
    frequency([
      {4, elements(@huge)},
      {3, int(-3, 25)},
      {2, Hostile.term()},
      {1, elements(["lz4", "zstd", "nope", "<f8", "|u1", "<i4", true])},
      {1, elements(["start", "end", "auto", "classic", "try_consecutive", 0.5, -0.5, 1.0e308])}
    ])
  end

  @doc "A shape tuple: small, huge, negative, 65+ dimensions, or not a tuple."
  @spec shape() :: ExZarr.Fuzz.Gen.t()
  def shape do
    frequency([
      {3, map(list(Hostile.size(), 1, 3), &List.to_tuple/1)},
      {1, map(int(65, 70), &Tuple.duplicate(1, &1))},
      {1, map(list(int(-3, 3), 1, 3), &List.to_tuple/1)},
      {1, Hostile.term()}
    ])
  end

  @doc "A dtype option: unknown, or a parameterised type with a huge size."
  @spec dtype() :: ExZarr.Fuzz.Gen.t()
  def dtype do
    oneof([
      elements([:int33, "int32", "<i4", :object, nil, {:raw_bytes, 0}, {:structured, []}]),
      map({elements([:raw_bytes, :fixed_bytes, :fixed_utf32]), Hostile.int()}, fn {t, n} ->
        {t, n}
      end),
      map(
        {elements([:datetime64, :timedelta64]), elements(["ms", "Q", "", 1]), Hostile.int()},
        fn {t, u, s} -> {t, u, s} end
      ),
      map(
        list(
          {elements(["a", "b", "a"]), elements([:int32, {:raw_bytes, 1 <<< 40}, :string, :nope])},
          1,
          3
        ),
        fn fields ->
          {:structured, Enum.map(fields, fn {name, t} -> {name, t, :little, {}} end)}
        end
      )
    ])
  end

  @doc "An explicit v3 codec list: sharding with huge inner counts, nested, or odd codecs."
  @spec codecs() :: ExZarr.Fuzz.Gen.t()
  def codecs do
    oneof([
      map(
        {shape(), elements([[%{name: "bytes"}], [%{name: "bytes"}, %{name: "zstd"}], []])},
        fn {inner, codecs} ->
          [%{name: "sharding_indexed", configuration: %{chunk_shape: inner, codecs: codecs}}]
        end
      ),
      map(compressor(), fn c ->
        [%{name: "bytes"}, %{name: c.id, configuration: Map.delete(c, :id)}]
      end),
      elements([
        [],
        [%{name: "zstd"}],
        ["bytes", "bytes"],
        [%{name: "transpose", configuration: %{order: [5]}}, %{name: "bytes"}]
      ]),
      Hostile.term()
    ])
  end

  @doc """
  Attributes: JSON-like maps with values that are not JSON (tuples, atoms), or `{:deep, n}`
  (built in the child: a value nested `n` lists deep).
  """
  @spec attributes() :: ExZarr.Fuzz.Gen.t()
  def attributes do
    oneof([
      map(
        list({oneof([elements(["a", "", "ü"]), Hostile.term()]), Hostile.term()}, 0, 3),
        &Map.new/1
      ),
      elements([
        %{"a" => [1, [2, [3]]]},
        %{"a" => %{"b" => nil}},
        %{"n" => 1 <<< 70},
        %{"f" => 1.0e308}
      ]),
      map(int(1, 100_000), &{:deep, &1}),
      Hostile.term()
    ])
  end

  @doc "The operations of a case: open, read, write, a few hostile calls, resize, read again."
  @spec ops(:array | :group, non_neg_integer()) :: ExZarr.Fuzz.Gen.t()
  def ops(:array, max_extra) do
    map(
      {int(0, 1000), int(0, 1000), int(0, 1000), list(array_op(), 0, max_extra),
       list(int(-3, 3), 1, 3), int(0, 1000)},
      fn {s1, s2, s3, extra, delta, s4} ->
        [
          {:open, []},
          {:get_slice, :whole},
          {:get_slice, {:box, s1, [], false}},
          {:set_slice, :fit, {:box, s2, [], false}},
          {:read_chunk, {:chunk, s3}}
        ] ++
          extra ++
          [{:resize, {:delta, delta}}, {:get_slice, {:box, s4, [], false}}, {:get_slice, :whole}]
      end
    )
  end

  def ops(:group, max_extra) do
    map({list(group_op(), 0, max_extra), int(0, 10)}, fn {extra, nth} ->
      [{:open, []}, {:group, :members}, {:group, :tree}, {:group, {:open, nth}}] ++ extra
    end)
  end

  @doc "One hostile call on an array (a third of them selection calls)."
  @spec array_op() :: ExZarr.Fuzz.Gen.t()
  def array_op do
    frequency([{2, other_op()}, {1, selection_op()}])
  end

  defp other_op do
    oneof([
      {:get_slice, selection()},
      {:set_slice, data(), selection()},
      {:read_chunk, coords()},
      {:write_chunk, coords(), data()},
      {:resize, oneof([{:delta, list(int(-20, 20), 1, 3)}, shape()])},
      {:append, data(), oneof([int(-3, 3), Hostile.term()])},
      {:chunk_stream, list(stream_option(), 0, 3)},
      {:attributes, elements([:set, :update]), attributes()},
      {:attributes, :delete, oneof([list(elements(["a", :a, 1, nil]), 0, 2), Hostile.term()])},
      {:open, list(open_option(), 1, 3)},
      {:open_group, list(open_option(), 0, 2)}
    ])
  end

  @doc """
  A call of the selection API (`get_`/`set_` + `orthogonal`, `coordinates`, `mask`, `blocks`):
  `{:select, :get | :set, kind, spec, data}`, the spec resolved against the array by
  `ExZarr.Fuzz.Select` (`data` as for `set_slice`, nil for a get).
  """
  @spec selection_op() :: ExZarr.Fuzz.Gen.t()
  def selection_op do
    spec =
      oneof([
        {:orthogonal, axes()},
        {:blocks, axes()},
        {:coordinates, {:points, int(0, 1000), int(0, 8), list(point_edit(), 0, 2)}},
        {:mask,
         {:mask, int(0, 1000), int(0, 40),
          frequency([{6, :exact}, {2, {:off_by, int(-2, 2)}}, {1, :booleans}, {1, :bits}])}},
        {elements([:orthogonal, :blocks, :coordinates, :mask]), {:term, index_term()}}
      ])

    map({elements([:get, :set]), spec, data()}, fn
      {:get, {kind, spec}, _data} -> {:select, :get, kind, spec, nil}
      {:set, {kind, spec}, data} -> {:select, :set, kind, spec, data}
    end)
  end

  # One entry per axis (cycled), one more or fewer now and then; as a tuple, a bare entry or a
  # list.
  defp axes do
    {:axes, list(axis_entry(), 1, 4), frequency([{8, 0}, {1, -1}, {1, 1}]),
     frequency([{8, :tuple}, {1, :bare}, {1, :list}])}
  end

  defp axis_entry do
    frequency([
      {4, {:int, int(0, 1000)}},
      {4, {:range, int(0, 1000), elements([1, 1, 1, 2, 3, 7, 1 <<< 64])}},
      {2, {:all, int(0, 1000)}},
      {3, {:list, int(0, 1000), int(0, 6)}},
      {1, {:bools, int(0, 1000)}},
      {3, {:edge, bound()}},
      {2, {:range_of, bound(), bound(), elements([1, 0, -1, 2, 1 <<< 64, -(1 <<< 64), 1.0, :x])}},
      {2, {:term, index_term()}}
    ])
  end

  # An index bound relative to the axis size (`size + d`, `-size + d`), or any integer.
  defp bound,
    do: frequency([{2, {:size, int(-1, 2)}}, {2, {:neg_size, int(-2, 1)}}, {2, Hostile.int()}])

  # Values that are no index, or of a wrong shape (`:improper`: `[0 | 1]`, built in the child).
  defp index_term do
    oneof([
      elements([1.5, -0.0, 1.0e300, :x, :all, "0", nil, true, [0, 1.5], [true, 0], [nil], [[0]]]),
      elements([:improper, [true], [-1, -1, 0], [{0}], {[0]}, {0, 0}, [1 <<< 64], <<1::3>>]),
      Hostile.term()
    ])
  end

  defp point_edit do
    {int(0, 8),
     oneof([
       elements([:short, :long, :list]),
       {:coord, int(0, 2), bound()},
       {:term, index_term()}
     ])}
  end

  defp group_op do
    oneof([
      {:group, elements([:members, :tree, :list, :consolidate])},
      {:group,
       {:open,
        oneof([
          int(0, 5),
          elements(["..", "../..", "/", "", "a/../..", "c/0", "a\u0000"]),
          Hostile.term()
        ])}},
      {:attributes, elements([:set, :update]), attributes()},
      {:open_group, list(open_option(), 0, 2)},
      {:open, list(open_option(), 1, 2)}
    ])
  end

  defp selection do
    frequency([
      {4,
       {:box, int(0, 1000),
        list(
          {elements([:start, :stop, :step, :chnks, :max_concurrency, :timeout, :bogus]),
           Hostile.term()},
          0,
          2
        ), bool()}},
      {1, Hostile.term()}
    ])
  end

  defp data, do: frequency([{3, :fit}, {2, {:off_by, int(-9, 9)}}, {1, Hostile.term()}])
  defp coords, do: frequency([{2, {:chunk, int(0, 1000)}}, {1, Hostile.term()}])

  defp stream_option,
    do:
      {elements([:parallel, :ordered, :level, :timeout, :bogus]),
       oneof([elements([1, 4, 0, -1, :inner, :outer, true, nil]), Hostile.term()])}

  defp open_option,
    do:
      {elements([:zarr_format, :use_consolidated, :prefix, :write_empty_chunks, :cache, :bogus]),
       Hostile.term()}
end
