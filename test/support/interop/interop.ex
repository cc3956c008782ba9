defmodule ExZarr.Test.Interop do
  @moduledoc """
  Helpers for the interop tests: runs `zarr_fixture.py` (zarr-python / tensorstore) on a batch of
  cases in one Python process, translates a case into `ExZarr.create/1` options and selections,
  and explains binary mismatches.

  A case is a map with atom keys, described in `zarr_fixture.py`; `ExZarr.Test.Interop.Matrix`
  builds them.

      results = ExZarr.Test.Interop.run_batch(:write, cases, dir)
      %{"ok" => true} = results[hd(cases).name]
  """

  alias ExZarr.Test.Python

  @script Path.expand("zarr_fixture.py", __DIR__)
  @external_resource @script

  @itemsize %{
    "bool" => 1,
    "int8" => 1,
    "uint8" => 1,
    "int16" => 2,
    "uint16" => 2,
    "float16" => 2,
    "int32" => 4,
    "uint32" => 4,
    "float32" => 4,
    "int64" => 8,
    "uint64" => 8,
    "float64" => 8,
    "complex64" => 8,
    "complex128" => 16
  }

  @doc "Bytes per element of a dtype name (`\"int32\"` -> 4)."
  @spec itemsize(String.t()) :: pos_integer()
  def itemsize(dtype), do: Map.fetch!(@itemsize, dtype)

  @doc """
  Runs the fixture script in `mode` (`:write` or `:verify`) on `cases` with the zarr-python of
  `venv` (`t:ExZarr.Test.Python.venv/0`), with its spec and results files in `dir`. Returns the
  results map (case name -> `%{"ok" => bool, "errors" => [..]}`); raises with Python's output
  when the script itself fails.
  """
  @spec run_batch(:write | :verify, [map()], Path.t(), Python.venv()) :: %{String.t() => map()}
  def run_batch(mode, cases, dir, venv \\ :default) do
    File.mkdir_p!(dir)
    spec_path = Path.join(dir, "#{mode}-spec.json")
    results_path = Path.join(dir, "#{mode}-results.json")
    File.rm(results_path)
    File.write!(spec_path, encode_json(%{results: results_path, cases: cases}))
    Python.run!(File.read!(@script), [Atom.to_string(mode), "@" <> spec_path], venv)
    :jiffy.decode(File.read!(results_path), [:return_maps])
  end

  @doc """
  Whether ExZarr supports the native compressors (zstd, blosc, lz4): any answer but
  `{:error, {:unsupported_codec, _}}` from creating an array with each counts as supported,
  so that other errors show up as test failures.
  """
  @spec native_codecs?() :: boolean()
  def native_codecs? do
    Enum.all?(
      [
        %{id: "zstd", level: 1},
        %{id: "blosc", cname: "lz4", clevel: 5, shuffle: 1},
        %{id: "lz4", acceleration: 1}
      ],
      fn comp ->
        result =
          ExZarr.create(
            shape: {1},
            chunks: {1},
            dtype: :uint8,
            storage: :memory,
            compressor: comp
          )

        not match?({:error, {:unsupported_codec, _}}, result)
      end
    )
  end

  @doc """
  Encodes a term as JSON (`nil` -> `null`, atom keys as strings). jiffy writes -0.0 as `0.0`,
  so negative zero goes as the string `"-0.0"`, which the fixture script reads as a float.
  """
  @spec encode_json(term()) :: binary()
  def encode_json(term), do: IO.iodata_to_binary(:jiffy.encode(to_ejson(term)))

  defp to_ejson(nil), do: :null

  defp to_ejson(x) when is_float(x) and x == 0.0 do
    <<sign::1, _::63>> = <<x::float-64>>
    if sign == 1, do: "-0.0", else: x
  end

  defp to_ejson(map) when is_map(map), do: Map.new(map, fn {k, v} -> {k, to_ejson(v)} end)
  defp to_ejson(list) when is_list(list), do: Enum.map(list, &to_ejson/1)
  defp to_ejson(other), do: other

  @doc """
  A path under the system temp dir unique to this OS process and call (test runs of other
  worktrees may share the machine).
  """
  @spec unique_tmp_path(String.t()) :: Path.t()
  def unique_tmp_path(label) do
    unique = "#{System.pid()}-#{System.unique_integer([:positive])}"
    Path.join(System.tmp_dir!(), "exzarr-#{label}-#{unique}")
  end

  @doc "A fresh empty directory under the system temp dir."
  @spec tmp_dir!(String.t()) :: Path.t()
  def tmp_dir!(label) do
    dir = unique_tmp_path(label)
    File.rm_rf!(dir)
    File.mkdir_p!(dir)
    dir
  end

  @doc """
  The file holding a case's expected bytes: the whole array (`:full`), the data written
  (`:region`), the data of the update (`:update`), all chunks in grid order (`:chunks`), the
  coordinates of the stored chunks (`:stored`, JSON) or slice `k`.
  """
  @spec expected_file(map(), :full | :region | :update | :chunks | :stored | non_neg_integer()) ::
          Path.t()
  def expected_file(%{data: data}, :full), do: data <> ".full.bin"
  def expected_file(%{data: data}, :chunks), do: data <> ".chunks.bin"
  def expected_file(%{data: data}, :region), do: data <> ".region.bin"
  def expected_file(%{data: data}, :update), do: data <> ".update.bin"
  def expected_file(%{data: data}, :stored), do: data <> ".stored.json"
  def expected_file(%{data: data}, k) when is_integer(k), do: data <> ".slice#{k}.bin"

  @doc """
  The Elixir fill value for a JSON fill value as stored in metadata
  (`"NaN"` -> `:nan`, `[1.0, 2.0]` -> `{1.0, 2.0}`, `null` -> `nil`).
  """
  @spec elixir_fill(term()) :: term()
  def elixir_fill("NaN"), do: :nan
  def elixir_fill("Infinity"), do: :infinity
  def elixir_fill("-Infinity"), do: :neg_infinity
  def elixir_fill([re, im]), do: {elixir_fill(re), elixir_fill(im)}
  def elixir_fill(other), do: other

  @doc """
  Where a case's array is for `ExZarr.open/1`: `path:` (the store root) and, for a case with
  a `prefix`, `prefix:`.
  """
  @spec open_opts(map()) :: keyword()
  def open_opts(%{prefix: prefix, path: path}) do
    suffix = "/" <> prefix
    true = String.ends_with?(path, suffix)
    [path: binary_part(path, 0, byte_size(path) - byte_size(suffix)), prefix: prefix]
  end

  def open_opts(%{path: path}), do: [path: path]

  @doc "Options for `ExZarr.create/1` that describe the case's array on the filesystem."
  @spec create_opts(map()) :: keyword()
  def create_opts(c) do
    base = [
      shape: List.to_tuple(c.shape),
      chunks: List.to_tuple(c.chunks),
      dtype: String.to_atom(c.dtype),
      storage: :filesystem,
      zarr_format: c.zarr_format,
      fill_value: elixir_fill(Map.get(c, :fill_value))
    ]

    base ++ open_opts(c) ++ endian_opt(c) ++ layout_opts(c) ++ naming_opts(c)
  end

  defp naming_opts(c) do
    Enum.flat_map([:attributes, :dimension_names], fn key ->
      if Map.has_key?(c, key), do: [{key, Map.fetch!(c, key)}], else: []
    end)
  end

  defp endian_opt(c) do
    if itemsize(c.dtype) > 1,
      do: [endian: String.to_atom(Map.get(c, :endian, "little"))],
      else: []
  end

  defp layout_opts(%{zarr_format: 2} = c) do
    [
      order: Map.get(c, :order, "C"),
      dimension_separator: Map.get(c, :separator, "."),
      compressor: compressor_opt(Map.get(c, :compressor))
    ]
  end

  defp layout_opts(%{zarr_format: 3} = c) do
    key_encoding = %{
      name: Map.get(c, :key_encoding, "default"),
      separator: Map.get(c, :separator, "/")
    }

    if Map.get(c, :transpose) || Map.get(c, :crc32c) do
      [chunk_key_encoding: key_encoding, codecs: v3_codecs(c)]
    else
      [
        chunk_key_encoding: key_encoding,
        order: Map.get(c, :order, "C"),
        compressor: compressor_opt(Map.get(c, :compressor))
      ]
    end
  end

  defp compressor_opt(nil), do: nil

  defp compressor_opt(comp),
    do: Map.new(comp, fn {k, v} -> {String.to_atom(to_string(k)), v} end)

  # An explicit v3 codec list (as `t:ExZarr.Codec.spec/0` maps) for cases that need one.
  defp v3_codecs(c) do
    transpose =
      case {Map.get(c, :transpose), Map.get(c, :order, "C")} do
        {nil, "C"} -> []
        {nil, "F"} -> [transpose_codec(Enum.reverse(Enum.to_list(0..(length(c.shape) - 1))))]
        {perm, _} -> [transpose_codec(perm)]
      end

    bytes = %{name: "bytes", configuration: %{"endian" => Map.get(c, :endian, "little")}}

    compressor =
      case Map.get(c, :compressor) do
        nil ->
          []

        comp ->
          {id, conf} = Map.pop(Map.new(comp, fn {k, v} -> {to_string(k), v} end), "id")
          [%{name: v3_compressor_name(id), configuration: conf}]
      end

    crc = if Map.get(c, :crc32c), do: [%{name: "crc32c", configuration: %{}}], else: []
    transpose ++ [bytes] ++ compressor ++ crc
  end

  defp transpose_codec(perm), do: %{name: "transpose", configuration: %{"order" => perm}}

  defp v3_compressor_name("zlib"), do: "numcodecs.zlib"
  defp v3_compressor_name("lz4"), do: "numcodecs.lz4"
  defp v3_compressor_name(id), do: id

  @doc "`[start: tuple, stop: tuple]` for a `[start_list, stop_list]` selection."
  @spec selection([[non_neg_integer()]]) :: keyword()
  def selection([start, stop]), do: [start: List.to_tuple(start), stop: List.to_tuple(stop)]

  @doc "The selection of the whole array."
  @spec full_selection(map()) :: keyword()
  def full_selection(c), do: selection([Enum.map(c.shape, fn _ -> 0 end), c.shape])

  @doc """
  Splits a case's write into one or two `{binary, selection}` writes: a region at least two
  long in its first dimension is written in two halves (unless the case says `split: false`),
  so partially covered chunks are read-modify-written twice. Nothing for region "none".
  """
  @spec writes(map()) :: [{binary(), keyword()}]
  def writes(c) do
    data = File.read!(expected_file(c, :region))
    split? = Map.get(c, :split, true)

    case Map.get(c, :region) do
      "none" ->
        []

      nil ->
        [{data, full_selection(c)}]

      [[a | rest_start], [b | rest_stop]] when b - a >= 2 and split? ->
        mid = a + div(b - a, 2)
        row = itemsize(c.dtype) * Enum.product(Enum.zip_with(rest_start, rest_stop, &(&2 - &1)))
        split = (mid - a) * row

        [
          {binary_part(data, 0, split), selection([[a | rest_start], [mid | rest_stop]])},
          {binary_part(data, split, byte_size(data) - split),
           selection([[mid | rest_start], [b | rest_stop]])}
        ]

      region ->
        [{data, selection(region)}]
    end
  end

  @doc """
  Explains how `got` differs from `expected` (packed C-order elements of `itemsize` bytes in
  an array of `shape`): sizes, first differing element and its bytes. "" when equal.
  """
  @spec explain_diff(binary(), binary(), pos_integer(), [non_neg_integer()]) :: String.t()
  def explain_diff(expected, expected, _itemsize, _shape), do: ""

  def explain_diff(expected, got, _itemsize, _shape) when byte_size(expected) != byte_size(got),
    do: "got #{byte_size(got)} bytes, expected #{byte_size(expected)}"

  def explain_diff(expected, got, itemsize, shape) do
    first = div(:binary.longest_common_prefix([expected, got]), itemsize)
    at = unravel(first, shape)
    e = binary_part(expected, first * itemsize, itemsize)
    g = binary_part(got, first * itemsize, itemsize)

    "first difference at element #{inspect(at)} (flat #{first}): got bytes " <>
      "#{Base.encode16(g, case: :lower)}, expected #{Base.encode16(e, case: :lower)} (little-endian)"
  end

  defp unravel(flat, shape) do
    {idx, _} =
      shape
      |> Enum.reverse()
      |> Enum.reduce({[], flat}, fn dim, {acc, rest} ->
        {[rem(rest, dim) | acc], div(rest, dim)}
      end)

    List.to_tuple(idx)
  end

  @doc "The errors of a case in a results map, as one readable string."
  @spec result_errors(%{String.t() => map()}, map()) :: String.t() | nil
  def result_errors(results, %{name: name}) do
    case Map.fetch(results, name) do
      {:ok, %{"ok" => true}} -> nil
      {:ok, %{"errors" => errors}} -> Enum.join(errors, "\n")
      :error -> "no result for #{name}"
    end
  end
end
