defmodule ExZarr.Metadata do
  @moduledoc """
  The one canonical description of a Zarr array, whatever format it is stored in.

  Zarr v2 (`.zarray` + `.zattrs`) and v3 (`zarr.json`) are translated at the JSON edge by
  `ExZarr.Metadata.V2` and `ExZarr.Metadata.V3`; everything else in ExZarr works on this struct.
  A v2 array becomes a codec pipeline like a v3 one: `order: "F"` is a `transpose` codec with
  the reversed axis order, the dtype's byte order is the `bytes` codec's `endian`, filters are
  the codecs before `bytes` (array->array) or after it (bytes->bytes), and the compressor is
  the last codec.

  `new/1` builds the struct from `ExZarr.create/1` options, `chunk_key/2` names a chunk in the
  store, `from_json/1` / `to_documents/1` read and write the metadata documents (through
  `ExZarr.JSON`).

  Fields:

    * `zarr_format`: 2 or 3
    * `shape`, `chunks`: tuples (`chunks` is the chunk grid's chunk shape: for a sharded array
      the shard shape; in a v3 `rectilinear` grid an axis is a list of chunk edges, see
      `ExZarr.ChunkGrid`)
    * `dtype`: see `ExZarr.DType`
    * `fill_value`: the decoded fill value (see `ExZarr.DType.decode_fill/3`); `nil` only for
      a v2 `null` fill value
    * `codecs`: the pipeline as `t:ExZarr.Codec.spec/0` maps, in v3 order
    * `chunk_key_encoding`: `%{name: "default" | "v2", separator: "/" | "."}`
    * `attributes`: user attributes (`.zattrs` / `attributes`)
    * `dimension_names`: list of names (or nils), or nil
    * `storage_transformers`: as stored (v3)
  """

  alias ExZarr.{JSON, Limits, Result}

  @enforce_keys [:zarr_format, :shape, :chunks, :dtype, :codecs, :chunk_key_encoding]
  defstruct [
    :zarr_format,
    :shape,
    :chunks,
    :dtype,
    :fill_value,
    :codecs,
    :chunk_key_encoding,
    attributes: %{},
    dimension_names: nil,
    storage_transformers: []
  ]

  @type t :: %__MODULE__{
          zarr_format: 2 | 3,
          shape: tuple(),
          chunks: tuple(),
          dtype: ExZarr.DType.t(),
          fill_value: term(),
          codecs: [ExZarr.Codec.spec()],
          chunk_key_encoding: %{name: String.t(), separator: String.t()},
          attributes: map(),
          dimension_names: [String.t() | nil] | nil,
          storage_transformers: list()
        }

  alias ExZarr.DType
  alias ExZarr.Metadata.{V2, V3}

  @default_compressor %{"id" => "zstd", "level" => 0}

  @doc """
  Builds metadata from the options of `ExZarr.create/1` (a keyword list or map; options that
  are not about metadata, like `storage:` or `path:`, are ignored):

    * `:shape` (required) and `:chunks` (default: the shape, with 1 for empty dimensions):
      tuples of integers; in v3 an axis of `:chunks` may be a list of chunk edges summing to at
      least the axis' length (a `rectilinear` grid, see `ExZarr.ChunkGrid`)
    * `:dtype`: a `ExZarr.DType` atom (or its v3 name), default `:float64`; a structured type
      with big-endian fields is v2 only (v3 fields are little-endian)
    * `:zarr_format`: 2 or 3, default 3
    * `:fill_value`: the type's default unless given; `nil` means `null` in v2; in v2 a NaN
      with a payload (`{:bits, n}`) becomes the canonical NaN, which is all `.zarray` can say
    * `:compressor`: a numcodecs-style map (`%{id: "zstd", level: 3}`, atom or string keys),
      or `nil` / `:none`; default zstd level 0 (as zarr-python)
    * `:filters`: a list of numcodecs-style maps
    * `:order`: `"C"` (default) or `"F"` (also `:c` / `:f`); `"F"` stores chunks transposed
      (a v3 `transpose` codec, v2 `order: "F"`)
    * `:endian`: `:little` (default) or `:big`
    * `:codecs`: an explicit v3 codec list (`%{name: "gzip", configuration: %{level: 5}}` or a
      name), which replaces `:compressor`, `:filters`, `:order` and `:endian`
    * `:chunk_key_encoding`: `"default"` or `"v2"` (v3 only; v2 arrays always use `"v2"`), or
      `%{name: ..., separator: ...}`
    * `:dimension_separator`: `"/"` or `"."` (default `"/"` for the v3 `default` encoding, `"."`
      otherwise)
    * `:attributes`: a map of JSON values; `:dimension_names`: a list of strings or nils (v3)
    * `:shards`: the shard shape (v3, as zarr-python's `create_array(shards=...)`): the chunk
      grid becomes the shard grid, `:chunks` the inner chunk shape (it must divide the shard
      shape), and the codecs the inner codecs of one `sharding_indexed` codec

  Errors name the option: `{:error, {:invalid_option, :chunks, {0}}}`, a limit of
  `ExZarr.Limits` (`{:too_many_dimensions, 65, max: 64}`, `{:too_large, :itemsize, size, max}`),
  or come from the codec registry (`{:unsupported_codec, id}`,
  `{:invalid_codec_config, id, detail}`).

      iex> {:ok, meta} = ExZarr.Metadata.new(shape: {100, 100}, chunks: {10, 10}, dtype: :int32,
      ...>   order: "F", compressor: nil)
      iex> {meta.zarr_format, meta.fill_value, Enum.map(meta.codecs, & &1.name)}
      {3, 0, ["transpose", "bytes"]}
      iex> ExZarr.Metadata.new(shape: {10}, chunks: {0})
      {:error, {:invalid_option, :chunks, {0}}}
  """
  @spec new(keyword() | map()) :: {:ok, t()} | {:error, term()}
  def new(opts) when is_list(opts) do
    if Keyword.keyword?(opts),
      do: new(Map.new(opts)),
      else: {:error, {:invalid_option, :options, opts}}
  end

  def new(%{} = opts) do
    with {:ok, format} <- opt_format(opts),
         {:ok, shape} <- opt_shape(opts),
         {:ok, chunks} <- opt_chunks(opts, shape, format),
         {:ok, dtype} <- opt_dtype(opts),
         :ok <- check_bounds(shape, ExZarr.ChunkGrid.max_shape(chunks), dtype),
         {:ok, fill} <- opt_fill(opts, dtype, format),
         {:ok, key_encoding} <- opt_key_encoding(opts, format),
         {:ok, attributes} <- opt_attributes(opts),
         {:ok, names} <- opt_dimension_names(opts, shape, format),
         {:ok, codecs} <- opt_codecs(opts, dtype, tuple_size(shape)),
         {:ok, chunks, codecs} <- opt_shards(opts, shape, chunks, codecs, format) do
      meta = %__MODULE__{
        zarr_format: format,
        shape: shape,
        chunks: chunks,
        dtype: dtype,
        fill_value: fill,
        codecs: codecs,
        chunk_key_encoding: key_encoding,
        attributes: attributes,
        dimension_names: names
      }

      with {:ok, meta} <- check_v2(meta), do: check_v3(meta)
    end
  end

  def new(opts), do: {:error, {:invalid_option, :options, opts}}

  defp opt_format(opts) do
    case Map.get(opts, :zarr_format, 3) do
      f when f in [2, 3] -> {:ok, f}
      other -> invalid_option(:zarr_format, other)
    end
  end

  defp opt_shape(%{shape: shape}) do
    if dims?(shape, 0), do: {:ok, shape}, else: invalid_option(:shape, shape)
  end

  defp opt_shape(_opts), do: invalid_option(:shape, nil)

  defp opt_chunks(opts, shape, format) do
    default = shape |> Tuple.to_list() |> Enum.map(&max(&1, 1)) |> List.to_tuple()

    case Map.get(opts, :chunks, default) do
      chunks when tuple_size(chunks) == tuple_size(shape) ->
        cond do
          dims?(chunks, 1) -> {:ok, chunks}
          ExZarr.ChunkGrid.rectilinear?(chunks) -> ExZarr.ChunkGrid.option(chunks, shape, format)
          true -> invalid_option(:chunks, chunks)
        end

      chunks ->
        invalid_option(:chunks, chunks)
    end
  end

  defp dims?(tuple, min) when is_tuple(tuple),
    do: tuple |> Tuple.to_list() |> Enum.all?(&(is_integer(&1) and &1 >= min))

  defp dims?(_other, _min), do: false

  defp opt_dtype(opts) do
    case Map.get(opts, :dtype, :float64) do
      name when is_binary(name) ->
        with {:error, _} <- DType.from_v3(name), do: invalid_option(:dtype, name)

      dtype ->
        case DType.check(dtype) do
          :ok -> {:ok, dtype}
          {:error, {:too_large, _, _, _}} = error -> error
          {:error, _} -> invalid_option(:dtype, dtype)
        end
    end
  end

  @doc false
  # The bounds of `ExZarr.Limits` on a shape and a chunk shape (lists or tuples) and the item
  # size, checked before anything is sized from them.
  @spec check_bounds([integer()] | tuple(), [integer()] | tuple(), DType.t()) ::
          :ok | {:error, term()}
  def check_bounds(shape, chunks, dtype) when is_tuple(shape),
    do: check_bounds(Tuple.to_list(shape), chunks, dtype)

  def check_bounds(shape, chunks, dtype) do
    with :ok <- Limits.check_dims(length(shape)),
         :ok <- Limits.check_extents(:shape, shape),
         :ok <- Limits.check_extents(:chunks, chunks),
         do: Limits.check(:itemsize, DType.itemsize(dtype))
  end

  defp opt_fill(opts, dtype, format) do
    case {Map.fetch(opts, :fill_value), format} do
      {:error, _} ->
        {:ok, DType.default_fill(dtype)}

      {{:ok, nil}, 3} ->
        {:ok, DType.default_fill(dtype)}

      {{:ok, value}, _} ->
        case DType.cast_fill(dtype, value) do
          {:ok, fill} -> stored_fill(dtype, fill, format)
          {:error, _} -> invalid_option(:fill_value, value)
        end
    end
  end

  # The fill value as the metadata document gives it back: v2 cannot express a NaN payload
  # (it is written "NaN"), so the array created holds what every later reader of it reads.
  defp stored_fill(dtype, fill, format),
    do: DType.decode_fill(dtype, DType.encode_fill(dtype, fill, format), format)

  defp opt_key_encoding(opts, format) do
    given = Map.get(opts, :chunk_key_encoding)

    {name, given_separator} =
      case given do
        nil -> {if(format == 2, do: "v2", else: "default"), nil}
        %{} = map -> key_encoding_map(map)
        name -> {name, nil}
      end

    name = if is_atom(name) and name != nil, do: Atom.to_string(name), else: name
    dimension_separator = Map.get(opts, :dimension_separator)

    separator =
      dimension_separator || given_separator || if(name == "default", do: "/", else: ".")

    cond do
      name not in ["default", "v2"] or (format == 2 and name != "v2") ->
        invalid_option(:chunk_key_encoding, given)

      # the separator given twice, differently
      dimension_separator != nil and given_separator not in [nil, dimension_separator] ->
        invalid_option(:dimension_separator, dimension_separator)

      separator not in ["/", "."] ->
        invalid_option(:dimension_separator, separator)

      true ->
        {:ok, %{name: name, separator: separator}}
    end
  end

  # {name, separator} of a chunk_key_encoding map (atom or string keys); {nil, nil} (refused)
  # for a map with other keys or a key given both ways.
  defp key_encoding_map(map) do
    case JSON.from_term(map) do
      {:ok, json} ->
        if Map.keys(json) -- ["name", "separator"] == [],
          do: {json["name"], json["separator"]},
          else: {nil, nil}

      :error ->
        {nil, nil}
    end
  end

  defp opt_attributes(opts) do
    attributes = Map.get(opts, :attributes, %{})

    with {:error, _} <- ExZarr.Metadata.Attributes.normalize(attributes),
         do: invalid_option(:attributes, attributes)
  end

  defp opt_dimension_names(opts, shape, format) do
    case {Map.get(opts, :dimension_names), format} do
      {nil, _} ->
        {:ok, nil}

      {names, 3} when is_list(names) and length(names) == tuple_size(shape) ->
        if Enum.all?(names, &(is_nil(&1) or is_binary(&1))),
          do: {:ok, names},
          else: invalid_option(:dimension_names, names)

      {names, _} ->
        invalid_option(:dimension_names, names)
    end
  end

  defp opt_codecs(%{codecs: codecs}, _dtype, _ndim) do
    with {:ok, specs} <- normalize_codecs(codecs), :ok <- check_codec_order(specs) do
      {:ok, specs}
    end
  end

  defp opt_codecs(opts, dtype, ndim) do
    with {:ok, compressor} <- opt_compressor(opts),
         {:ok, filters} <- opt_filters(opts),
         {:ok, order} <- opt_order(opts),
         {:ok, endian} <- opt_endian(opts) do
      V2.codecs_from_v2(
        dtype: dtype,
        endian: endian,
        order: order,
        ndim: ndim,
        filters: filters,
        compressor: compressor
      )
    end
  end

  defp opt_shards(opts, shape, chunks, codecs, format) do
    case Map.get(opts, :shards) do
      nil ->
        {:ok, chunks, codecs}

      shards when format == 3 and tuple_size(shards) == tuple_size(chunks) ->
        # (shards may list edges, a rectilinear grid of shards; the inner chunks are regular)
        grid? =
          if ExZarr.ChunkGrid.rectilinear?(shards),
            do: ExZarr.ChunkGrid.check(shards, shape) == :ok,
            else: dims?(shards, 1) and Limits.check_extents(:shards, shards) == :ok

        divides? = grid? and dims?(chunks, 1) and ExZarr.ChunkGrid.divisible?(shards, chunks)

        if divides?,
          do:
            {:ok, shards,
             [
               %{
                 name: "sharding_indexed",
                 configuration: sharding_configuration(chunks, codecs)
               }
             ]},
          else: invalid_option(:shards, shards_error(shards, shape, chunks))

      shards ->
        invalid_option(:shards, shards)
    end
  end

  defp shards_error(shards, shape, chunks) do
    cond do
      ExZarr.ChunkGrid.rectilinear?(chunks) ->
        {shards, "the inner chunks of shards are regular (chunks without lists of edges)"}

      not ExZarr.ChunkGrid.rectilinear?(shards) ->
        shards

      (check = ExZarr.ChunkGrid.check(shards, shape)) != :ok ->
        {shards, elem(check, 1)}

      true ->
        {shards, "every shard edge must be a multiple of the chunk shape #{inspect(chunks)}"}
    end
  end

  # What `create(shards: ...)` writes, as zarr-python's `create_array`: inner `chunk_shape`
  # and `codecs`, the index as `bytes` little-endian + `crc32c` at the end.
  defp sharding_configuration(chunk_shape, codecs) do
    %{
      "chunk_shape" => Tuple.to_list(chunk_shape),
      "codecs" => Enum.map(codecs, &ExZarr.Codec.to_json/1),
      "index_codecs" => [
        %{"name" => "bytes", "configuration" => %{"endian" => "little"}},
        %{"name" => "crc32c"}
      ],
      "index_location" => "end"
    }
  end

  defp opt_compressor(opts) do
    case Map.get(opts, :compressor, @default_compressor) do
      none when none in [nil, :none] -> {:ok, nil}
      %{} = config -> numcodecs_config(:compressor, config)
      other -> invalid_option(:compressor, other)
    end
  end

  defp opt_filters(opts) do
    case Map.get(opts, :filters) do
      nil ->
        {:ok, []}

      list when is_list(list) ->
        Result.map_ok(list, &numcodecs_config(:filters, &1))

      other ->
        invalid_option(:filters, other)
    end
  end

  defp numcodecs_config(option, config) do
    with %{} <- config,
         {:ok, %{"id" => id} = json} when is_binary(id) <- JSON.from_term(config) do
      {:ok, json}
    else
      _ -> invalid_option(option, config)
    end
  end

  defp opt_order(opts) do
    case Map.get(opts, :order, "C") do
      order when order in ["C", :c, :C] -> {:ok, "C"}
      order when order in ["F", :f, :F] -> {:ok, "F"}
      other -> invalid_option(:order, other)
    end
  end

  defp opt_endian(opts) do
    case Map.get(opts, :endian, :little) do
      endian when endian in [:little, :big] -> {:ok, endian}
      other -> invalid_option(:endian, other)
    end
  end

  defp normalize_codecs([_ | _] = codecs) do
    Result.map_ok(codecs, fn codec ->
      with :error <- ExZarr.Codec.normalize_spec(codec), do: invalid_option(:codecs, codec)
    end)
  end

  defp normalize_codecs(other), do: invalid_option(:codecs, other)

  defp check_codec_order(specs) do
    case ExZarr.Codec.split_specs(specs) do
      {:ok, _array_to_array, _rest} ->
        :ok

      {:error, {:invalid_codec_order, names}} ->
        {:error,
         {:invalid_option, :codecs,
          "need array->array codecs, exactly one array->bytes codec, then bytes->bytes codecs, " <>
            "got " <> inspect(names)}}

      error ->
        error
    end
  end

  defp check_v2(%__MODULE__{zarr_format: 2} = meta) do
    case V2.encode(meta) do
      {:ok, _} -> {:ok, meta}
      {:error, {:not_expressible_in_v2, why}} -> {:error, {:invalid_option, :codecs, why}}
      error -> error
    end
  end

  defp check_v2(meta), do: {:ok, meta}

  # zarr.json has no byte order for the fields of a structured type (they are little-endian):
  # a big-endian field, as v2 has them, would be read back little-endian.
  defp check_v3(%__MODULE__{zarr_format: 3, dtype: {:structured, fields}} = meta) do
    case DType.Structured.big_endian_fields(fields) do
      [] ->
        {:ok, meta}

      names ->
        invalid_option(
          :dtype,
          "Zarr v3 structured fields are little-endian; big-endian: #{Enum.join(names, ", ")}"
        )
    end
  end

  defp check_v3(meta), do: {:ok, meta}

  defp invalid_option(option, value), do: {:error, {:invalid_option, option, value}}

  @doc false
  # A required field of a metadata document, checked by `validate`.
  @spec field(map(), String.t(), (term() -> {:ok, term()} | term())) :: {:ok, term()} | term()
  def field(json, key, validate) do
    case Map.fetch(json, key) do
      {:ok, value} -> validate.(value)
      :error -> {:error, {:invalid_metadata, "#{key} is missing"}}
    end
  end

  @doc false
  # Attributes as read from JSON: jiffy's `:null` becomes `nil`.
  @spec attributes_from_json(term()) :: term()
  def attributes_from_json(:null), do: nil

  def attributes_from_json(%{} = map),
    do: Map.new(map, fn {k, v} -> {k, attributes_from_json(v)} end)

  def attributes_from_json(list) when is_list(list), do: Enum.map(list, &attributes_from_json/1)
  def attributes_from_json(other), do: other

  @doc false
  # Attributes as written for jiffy: `nil` becomes `:null`.
  @spec attributes_to_json(term()) :: term()
  def attributes_to_json(nil), do: :null
  def attributes_to_json(%{} = map), do: Map.new(map, fn {k, v} -> {k, attributes_to_json(v)} end)
  def attributes_to_json(list) when is_list(list), do: Enum.map(list, &attributes_to_json/1)
  def attributes_to_json(other), do: other

  @doc """
  The store key of a chunk: `default` encoding `"c/0/1"` (`"c"` for a 0-d array), `v2`
  encoding `"0.1"` (`"0"` for a 0-d array), with the configured separator.

      iex> {:ok, meta} = ExZarr.Metadata.new(shape: {10, 10}, chunks: {5, 5}, compressor: nil)
      iex> ExZarr.Metadata.chunk_key(meta, {1, 0})
      "c/1/0"
      iex> {:ok, meta} = ExZarr.Metadata.new(shape: {}, zarr_format: 2, compressor: nil)
      iex> ExZarr.Metadata.chunk_key(meta, {})
      "0"
  """
  @spec chunk_key(t(), tuple()) :: String.t()
  def chunk_key(%__MODULE__{chunk_key_encoding: %{name: name, separator: sep}}, coords) do
    case {name, Tuple.to_list(coords)} do
      {"default", []} ->
        "c"

      {"default", coords} ->
        IO.iodata_to_binary(["c" | Enum.map(coords, &[sep | Integer.to_string(&1)])])

      {"v2", []} ->
        "0"

      {"v2", coords} ->
        Enum.map_join(coords, sep, &Integer.to_string/1)
    end
  end

  @doc """
  The chunk coordinates a store key (relative to the array) names: the inverse of
  `chunk_key/2`. `:error` for a key that names no chunk of this array's encoding (metadata
  documents, other names, another number of dimensions, numbers not written as `chunk_key/2`
  writes them).

      iex> {:ok, meta} = ExZarr.Metadata.new(shape: {10, 10}, chunks: {5, 5}, compressor: nil)
      iex> ExZarr.Metadata.chunk_coords(meta, "c/1/0")
      {:ok, {1, 0}}
      iex> ExZarr.Metadata.chunk_coords(meta, "zarr.json")
      :error
  """
  @spec chunk_coords(t(), String.t()) :: {:ok, tuple()} | :error
  def chunk_coords(%__MODULE__{chunk_key_encoding: %{name: name, separator: sep}} = meta, key)
      when is_binary(key) do
    ndim = tuple_size(meta.shape)

    parts =
      case {name, ndim, key} do
        {"default", 0, "c"} -> []
        {"v2", 0, "0"} -> []
        {_, 0, _} -> :error
        {"default", _, _} -> default_key_parts(String.split(key, sep))
        {"v2", _, _} -> String.split(key, sep)
        _ -> :error
      end

    with parts when is_list(parts) and length(parts) == ndim <- parts,
         coords = Enum.map(parts, &chunk_index/1),
         false <- :error in coords do
      {:ok, List.to_tuple(coords)}
    else
      _ -> :error
    end
  end

  defp default_key_parts(["c" | parts]), do: parts
  defp default_key_parts(_parts), do: :error

  defp chunk_index(text) do
    case Integer.parse(text) do
      {i, ""} when i >= 0 -> if Integer.to_string(i) == text, do: i, else: :error
      _ -> :error
    end
  end

  @doc """
  The chunk shape and the shard shape (`nil` when not sharded) of an array's metadata: a
  sharded array's chunk grid is its shards, and its chunks are the inner chunks.

      iex> {:ok, meta} = ExZarr.Metadata.new(shape: {8, 8}, chunks: {2, 4}, shards: {4, 8}, dtype: :uint8)
      iex> ExZarr.Metadata.chunk_shapes(meta)
      {{2, 4}, {4, 8}}
  """
  @spec chunk_shapes(t()) :: {tuple(), tuple() | nil}
  def chunk_shapes(%__MODULE__{chunks: chunks} = meta) do
    case sharding(meta) do
      %{configuration: %{"chunk_shape" => inner}} -> {shape_tuple(inner), chunks}
      nil -> {chunks, nil}
    end
  end

  @doc """
  The codec names of an array's pipeline, those inside a shard for a sharded array, without
  the `bytes` serializer unless it is alone.

      iex> {:ok, meta} = ExZarr.Metadata.new(shape: {8}, chunks: {4}, dtype: :float32, zarr_format: 2)
      iex> ExZarr.Metadata.codec_names(meta)
      ["zstd"]
  """
  @spec codec_names(t()) :: [String.t()]
  def codec_names(%__MODULE__{codecs: codecs} = meta) do
    names =
      case sharding(meta) do
        %{configuration: %{"codecs" => inner}} ->
          outer = Enum.map(codecs, & &1.name) -- ["sharding_indexed"]
          outer ++ Enum.map(inner, & &1["name"])

        nil ->
          Enum.map(codecs, & &1.name)
      end

    case names -- ["bytes"] do
      [] -> names
      others -> others
    end
  end

  defp sharding(%__MODULE__{codecs: codecs}),
    do: Enum.find(codecs, &(&1.name == "sharding_indexed"))

  @doc """
  Names of the metadata documents a node keeps beside its data: `3` or `2` those of a node of
  that format, `:node` those whose presence makes a node (an array or group of either
  format), `:all` every one, with v2's consolidated `.zmetadata`.

      iex> ExZarr.Metadata.document_names(2)
      [".zarray", ".zgroup", ".zattrs"]
      iex> ExZarr.Metadata.document_names(:node)
      ["zarr.json", ".zarray", ".zgroup"]
  """
  @spec document_names(2 | 3 | :node | :all) :: [String.t()]
  def document_names(3), do: ["zarr.json"]
  def document_names(2), do: [".zarray", ".zgroup", ".zattrs"]
  def document_names(:node), do: document_names(3) ++ (document_names(2) -- [".zattrs"])
  def document_names(:all), do: document_names(3) ++ document_names(2) ++ [".zmetadata"]

  defp shape_tuple(shape) when is_tuple(shape), do: shape
  defp shape_tuple(shape) when is_list(shape), do: List.to_tuple(shape)

  @doc """
  The metadata of the array resized to `shape` (as many dimensions, non-negative integers,
  within `ExZarr.Limits.max_extent/0`); `{:error, {:invalid_shape, shape}}` or the limit's
  error otherwise.

      iex> {:ok, meta} = ExZarr.Metadata.new(shape: {10}, compressor: nil)
      iex> {:ok, %{shape: {4}}} = ExZarr.Metadata.resize(meta, {4})
      iex> ExZarr.Metadata.resize(meta, {4, 4})
      {:error, {:invalid_shape, {4, 4}}}
  """
  @spec resize(t(), term()) :: {:ok, t()} | {:error, term()}
  def resize(%__MODULE__{shape: old} = meta, shape)
      when is_tuple(shape) and tuple_size(shape) == tuple_size(old) do
    if Enum.all?(Tuple.to_list(shape), &(is_integer(&1) and &1 >= 0)),
      do:
        with(
          :ok <- Limits.check_extents(:shape, shape),
          :ok <- ExZarr.ChunkGrid.check_shape(meta.chunks, shape),
          do: {:ok, %{meta | shape: shape}}
        ),
      else: {:error, {:invalid_shape, shape}}
  end

  def resize(%__MODULE__{}, shape), do: {:error, {:invalid_shape, shape}}

  @doc """
  Parses array metadata from `zarr.json` (v3) or `.zarray` (v2, without attributes; see
  `ExZarr.Metadata.V2.decode/2`), chosen by its `zarr_format`.

      iex> {:error, {:invalid_json, _}} = ExZarr.Metadata.from_json("not json")
      iex> ExZarr.Metadata.from_json(~s({"zarr_format": 3, "node_type": "group"}))
      {:error, :not_an_array}
  """
  @spec from_json(binary()) :: {:ok, t()} | {:error, term()}
  def from_json(binary) do
    case JSON.decode(binary) do
      {:ok, %{"zarr_format" => 2} = json} -> V2.decode(json, nil)
      {:ok, %{} = json} -> V3.decode(json)
      {:ok, _other} -> {:error, {:invalid_metadata, "metadata must be a JSON object"}}
      error -> error
    end
  end

  @doc """
  The metadata documents of an array, as `[{key, json_binary}]`: `zarr.json` for v3,
  `.zarray` and `.zattrs` for v2.

      iex> {:ok, meta} = ExZarr.Metadata.new(shape: {2}, zarr_format: 2, compressor: nil)
      iex> {:ok, [{".zarray", _}, {".zattrs", "{}"}]} = ExZarr.Metadata.to_documents(meta)
  """
  @spec to_documents(t()) :: {:ok, [{String.t(), binary()}]} | {:error, term()}
  def to_documents(%__MODULE__{zarr_format: 3} = meta),
    do: {:ok, [{"zarr.json", JSON.encode(V3.encode(meta))}]}

  def to_documents(%__MODULE__{zarr_format: 2} = meta) do
    with {:ok, %{zarray: zarray, zattrs: zattrs}} <- V2.encode(meta) do
      {:ok, [{".zarray", JSON.encode(zarray)}, {".zattrs", JSON.encode(zattrs)}]}
    end
  end
end
