defmodule ExZarr.Metadata.V2 do
  @moduledoc """
  Zarr v2 array metadata (`.zarray` + `.zattrs`) <-> `ExZarr.Metadata`.

  A v2 array is read into the same codec pipeline a v3 array has:

    * `order: "F"` -> a first `transpose` codec with the reversed axis order,
    * filters -> codecs before `bytes` (array->array ones) or after it (bytes->bytes ones),
    * the dtype's byte order -> the `bytes` codec's `endian`,
    * the compressor -> the last codec,
    * `dimension_separator` -> chunk key encoding `%{name: "v2", separator: sep}`.

  Numcodecs configs are translated by `ExZarr.Codec.Registry.from_v2/1` and
  `ExZarr.Codec.Registry.to_v2/1`.

      iex> {:ok, meta} =
      ...>   ExZarr.Metadata.V2.decode(
      ...>     %{"zarr_format" => 2, "shape" => [4, 6], "chunks" => [2, 3], "dtype" => ">i2",
      ...>       "compressor" => nil, "fill_value" => nil, "order" => "F", "filters" => nil},
      ...>     nil
      ...>   )
      iex> Enum.map(meta.codecs, & &1.name)
      ["transpose", "bytes"]
  """

  alias ExZarr.Codec.Registry
  alias ExZarr.DType
  alias ExZarr.Metadata

  @doc """
  Decodes a `.zarray` object and the `.zattrs` object (`nil` when absent), as decoded by jiffy.
  Unknown keys are ignored. Errors: `{:unsupported_dtype, json}`,
  `{:unsupported_codec, id}`, `{:invalid_codec_config, id, detail}`,
  `{:invalid_fill_value, dtype, json}`, `{:invalid_metadata, why}`, and the limits of
  `ExZarr.Limits` (`{:too_many_dimensions, n, max: 64}`, `{:too_large, what, size, max}`).
  """
  @spec decode(term(), map() | nil) :: {:ok, Metadata.t()} | {:error, term()}
  def decode(zarray, zattrs \\ nil)

  def decode(%{} = zarray, zattrs) do
    with :ok <- check_format(zarray),
         {:ok, shape} <- Metadata.field(zarray, "shape", &dims(&1, "shape", 0)),
         {:ok, chunks} <- Metadata.field(zarray, "chunks", &dims(&1, "chunks", 1)),
         :ok <- same_rank(shape, chunks),
         {:ok, filters} <- filters(Map.get(zarray, "filters", :null)),
         {:ok, dtype, endian} <- Metadata.field(zarray, "dtype", &dtype(&1, filters)),
         :ok <- Metadata.check_bounds(shape, chunks, dtype),
         {:ok, fill} <- DType.decode_fill(dtype, Map.get(zarray, "fill_value", :null), 2),
         {:ok, order} <- order(Map.get(zarray, "order", "C")),
         {:ok, compressor} <- compressor(Map.get(zarray, "compressor", :null)),
         {:ok, separator} <- separator(Map.get(zarray, "dimension_separator", ".")),
         {:ok, attributes} <- attributes(zattrs),
         {:ok, codecs} <-
           codecs_from_v2(
             dtype: dtype,
             endian: endian,
             order: order,
             ndim: length(shape),
             filters: filters,
             compressor: compressor
           ) do
      {:ok,
       %Metadata{
         zarr_format: 2,
         shape: List.to_tuple(shape),
         chunks: List.to_tuple(chunks),
         dtype: dtype,
         fill_value: fill,
         codecs: codecs,
         chunk_key_encoding: %{name: "v2", separator: separator},
         attributes: attributes
       }}
    end
  end

  def decode(_zarray, _zattrs), do: invalid(".zarray must be a JSON object")

  defp check_format(%{"zarr_format" => 2}), do: :ok

  defp check_format(%{"zarr_format" => f}),
    do: invalid("zarr_format must be 2, got #{inspect(f)}")

  defp check_format(_zarray), do: invalid("zarr_format is missing")

  defp dims(list, key, min) do
    if is_list(list) and Enum.all?(list, &(is_integer(&1) and &1 >= min)),
      do: {:ok, list},
      else: invalid("#{key} must be a list of integers >= #{min}, got #{inspect(list)}")
  end

  defp same_rank(shape, chunks) when length(shape) == length(chunks), do: :ok

  defp same_rank(shape, chunks),
    do: invalid("chunks #{inspect(chunks)} and shape #{inspect(shape)} differ in length")

  # An object ("|O") array's type is given by its object codec, the first filter.
  @object_codecs %{"vlen-utf8" => :string, "vlen-bytes" => :bytes}

  defp dtype("|O", filters) do
    case filters do
      [%{"id" => id} | _] when is_map_key(@object_codecs, id) ->
        {:ok, Map.fetch!(@object_codecs, id), nil}

      _ ->
        {:error, {:unsupported_dtype, "|O with filters #{inspect(filters)}"}}
    end
  end

  defp dtype(json, _filters), do: DType.from_v2(json)

  defp order(order) when order in ["C", "F"], do: {:ok, order}
  defp order(order), do: invalid("order must be \"C\" or \"F\", got #{inspect(order)}")

  defp filters(null) when null in [nil, :null], do: {:ok, []}

  defp filters(list) when is_list(list) do
    if Enum.all?(list, &is_map/1),
      do: {:ok, list},
      else: invalid("filters must be a list of codec objects, got #{inspect(list)}")
  end

  defp filters(other), do: invalid("filters must be a list or null, got #{inspect(other)}")

  defp compressor(null) when null in [nil, :null], do: {:ok, nil}
  defp compressor(%{} = config), do: {:ok, config}

  defp compressor(other),
    do: invalid("compressor must be an object or null, got #{inspect(other)}")

  defp separator(sep) when sep in ["/", "."], do: {:ok, sep}

  defp separator(sep),
    do: invalid("dimension_separator must be \"/\" or \".\", got #{inspect(sep)}")

  defp attributes(nil), do: {:ok, %{}}
  defp attributes(%{} = attributes), do: {:ok, Metadata.attributes_from_json(attributes)}
  defp attributes(other), do: invalid(".zattrs must be a JSON object, got #{inspect(other)}")

  @doc """
  Builds a v3-ordered codec pipeline from the parts of a v2 array: `:dtype`, `:endian`,
  `:order` (`"C"` / `"F"`), `:ndim`, `:filters` (numcodecs configs with string keys) and
  `:compressor` (a numcodecs config or `nil`). An object codec (`vlen-utf8`, `vlen-bytes`) as
  the first filter becomes the array->bytes codec; a variable-length `:dtype` without one gets
  its default (`vlen-utf8` for `:string`, `vlen-bytes` for `:bytes`).

      iex> ExZarr.Metadata.V2.codecs_from_v2(dtype: :float64, endian: :big, order: "C", ndim: 1,
      ...>   filters: [], compressor: nil)
      {:ok, [%{name: "bytes", configuration: %{"endian" => "big"}}]}
  """
  @spec codecs_from_v2(keyword()) :: {:ok, [ExZarr.Codec.spec()]} | {:error, term()}
  def codecs_from_v2(parts) do
    ndim = Keyword.fetch!(parts, :ndim)
    compressor = Keyword.fetch!(parts, :compressor)

    dtype = Keyword.fetch!(parts, :dtype)

    with {:ok, serializer, filters} <-
           serializer(Keyword.fetch!(parts, :filters), dtype, Keyword.fetch!(parts, :endian)),
         {:ok, array, bytes} <- split_filters(filters),
         {:ok, compressors} <- compressor_codecs(compressor),
         {:ok, serializer, compressors} <- compressor_serializer(serializer, bytes, compressors) do
      transpose =
        if Keyword.fetch!(parts, :order) == "F",
          do: [%{name: "transpose", configuration: %{"order" => reversed_axes(ndim)}}],
          else: []

      {:ok, transpose ++ array ++ [serializer] ++ bytes ++ compressors}
    end
  end

  defp serializer(filters, dtype, endian) do
    case {filters, dtype} do
      {[%{"id" => id} = first | rest], dtype} when is_map_key(@object_codecs, id) ->
        if Map.fetch!(@object_codecs, id) == dtype,
          do:
            with({:ok, spec, :array_to_bytes} <- Registry.from_v2(first), do: {:ok, spec, rest}),
          else: invalid("object codec #{id} on a #{inspect(dtype)} array (it needs dtype \"|O\")")

      {_, :string} ->
        {:ok, %{name: "vlen-utf8", configuration: %{}}, filters}

      {_, :bytes} ->
        {:ok, %{name: "vlen-bytes", configuration: %{}}, filters}

      _ ->
        {:ok, bytes_codec(dtype, endian), filters}
    end
  end

  defp reversed_axes(ndim), do: Enum.to_list((ndim - 1)..0//-1)

  @doc """
  The `bytes` codec for a type and byte order: no `endian` for types whose components are
  single bytes (one-byte numbers, `S`, `V`, structured), as zarr-python writes it.

      iex> ExZarr.Metadata.V2.bytes_codec(:uint8, :little)
      %{name: "bytes", configuration: %{}}
  """
  @spec bytes_codec(DType.t(), DType.endian()) :: ExZarr.Codec.spec()
  def bytes_codec(dtype, endian) do
    config =
      if DType.component_size(dtype) == 1,
        do: %{},
        else: %{"endian" => Atom.to_string(endian || :little)}

    %{name: "bytes", configuration: config}
  end

  # Array->array filters go before `bytes`, bytes->bytes ones after it; v3 cannot express an
  # array->array filter that follows a bytes->bytes one.
  defp split_filters(filters) do
    Enum.reduce_while(filters, {:ok, [], []}, fn config, {:ok, array, bytes} ->
      case Registry.from_v2(config) do
        {:ok, spec, :array_to_array} when bytes == [] ->
          {:cont, {:ok, [spec | array], bytes}}

        {:ok, _spec, :array_to_array} ->
          {:halt, invalid("array filter #{inspect(config)} follows a bytes filter")}

        {:ok, spec, :bytes_to_bytes} ->
          {:cont, {:ok, array, [spec | bytes]}}

        {:ok, _spec, kind} ->
          {:halt, invalid("filter #{inspect(config)} is #{kind}, not usable as a v2 filter")}

        error ->
          {:halt, error}
      end
    end)
    |> case do
      {:ok, array, bytes} -> {:ok, Enum.reverse(array), Enum.reverse(bytes)}
      error -> error
    end
  end

  # A numcodecs compressor that is an array->bytes codec in v3 (zfpy) replaces `bytes`.
  defp compressor_serializer(%{name: "bytes"}, [], {:serializer, spec}), do: {:ok, spec, []}

  defp compressor_serializer(_serializer, _bytes, {:serializer, spec}),
    do: invalid("compressor #{spec.name} after object codecs or bytes filters")

  defp compressor_serializer(serializer, _bytes, compressors), do: {:ok, serializer, compressors}

  defp compressor_codecs(nil), do: {:ok, []}

  defp compressor_codecs(config) do
    case Registry.from_v2(config) do
      {:ok, spec, :bytes_to_bytes} ->
        {:ok, [spec]}

      {:ok, spec, :array_to_bytes} ->
        {:ok, {:serializer, spec}}

      {:ok, _spec, kind} ->
        invalid("compressor #{inspect(config)} is #{kind}, not bytes_to_bytes")

      error ->
        error
    end
  end

  @doc """
  Encodes metadata as `.zarray` and `.zattrs` objects, as zarr-python writes them (`:null`
  for null). Fails with `{:not_expressible_in_v2, why}` when the pipeline or the chunk key
  encoding has no v2 form (a transpose that is not a full reversal, an array->bytes codec
  other than `bytes`, storage transformers, a `default` chunk key encoding, ...).

      iex> {:ok, meta} = ExZarr.Metadata.new(shape: {3}, dtype: :int16, zarr_format: 2, compressor: nil)
      iex> {:ok, %{zarray: zarray}} = ExZarr.Metadata.V2.encode(meta)
      iex> {zarray["dtype"], zarray["compressor"], zarray["dimension_separator"]}
      {"<i2", :null, "."}
  """
  @spec encode(Metadata.t()) :: {:ok, %{zarray: map(), zattrs: map()}} | {:error, term()}
  def encode(%Metadata{} = meta) do
    with :ok <- v2_expressible(meta),
         {:ok, parts} <- split_pipeline(meta.codecs, tuple_size(meta.shape)),
         :ok <- v2_byte_order(meta.dtype, elem(parts, 2)) do
      {order, filters, endian, compressor} = parts

      zarray = %{
        "zarr_format" => 2,
        "shape" => Tuple.to_list(meta.shape),
        "chunks" => Tuple.to_list(meta.chunks),
        "dtype" => DType.to_v2(meta.dtype, endian),
        "fill_value" => DType.encode_fill(meta.dtype, meta.fill_value, 2),
        "order" => order,
        "filters" => if(filters == [], do: :null, else: filters),
        "dimension_separator" => meta.chunk_key_encoding.separator,
        "compressor" => compressor || :null
      }

      {:ok, %{zarray: zarray, zattrs: Metadata.attributes_to_json(meta.attributes)}}
    end
  end

  defp v2_expressible(meta) do
    cond do
      meta.chunk_key_encoding.name != "v2" ->
        not_expressible("chunk key encoding #{inspect(meta.chunk_key_encoding.name)}")

      meta.storage_transformers != [] ->
        not_expressible("storage transformers")

      true ->
        :ok
    end
  end

  # A v2 dtype without a byte order (tensorstore's "bfloat16") is little-endian.
  defp v2_byte_order(dtype, :big) do
    if DType.component_size(dtype) > 1 and
         DType.to_v2(dtype, :big) == DType.to_v2(dtype, :little),
       do: not_expressible("big-endian #{inspect(dtype)}"),
       else: :ok
  end

  defp v2_byte_order(_dtype, _endian), do: :ok

  # -> {order, numcodecs filters, endian, numcodecs compressor | nil}
  defp split_pipeline(codecs, ndim) do
    {order, codecs} =
      case codecs do
        [%{name: "transpose", configuration: %{"order" => axes}} | rest] ->
          if axes == reversed_axes(ndim), do: {"F", rest}, else: {{:bad, axes}, rest}

        _ ->
          {"C", codecs}
      end

    with :ok <- check_order(order),
         {:ok, array, [serializer | bytes]} <- split_at_serializer(codecs),
         {serializer, bytes} = serializer_compressor(serializer, bytes),
         {:ok, endian, object_codec} <- endian(serializer),
         {:ok, array} <- to_v2_all(array),
         {:ok, bytes} <- to_v2_all(bytes) do
      {filters, compressor} =
        case bytes do
          [] -> {array, nil}
          _ -> {array ++ Enum.drop(bytes, -1), List.last(bytes)}
        end

      filters = object_codec ++ filters

      {:ok, {order, filters, endian, compressor}}
    end
  end

  # An array->bytes codec last, other than bytes and the object codecs (zfpy), is written as
  # the v2 compressor of little-endian data.
  defp serializer_compressor(%{name: name} = serializer, [])
       when name != "bytes" and not is_map_key(@object_codecs, name),
       do: {%{name: "bytes", configuration: %{}}, [serializer]}

  defp serializer_compressor(serializer, bytes), do: {serializer, bytes}

  defp check_order({:bad, axes}), do: not_expressible("transpose #{inspect(axes)}")
  defp check_order(_order), do: :ok

  defp split_at_serializer(codecs) do
    with {:error, {:invalid_codec_order, names}} <- ExZarr.Codec.split_specs(codecs),
         do: not_expressible("codec order #{inspect(names)}")
  end

  # -> {:ok, endian, object codec filters}
  defp endian(%{name: "bytes"} = codec) do
    case Map.get(codec, :configuration) || %{} do
      %{"endian" => "big"} -> {:ok, :big, []}
      _ -> {:ok, :little, []}
    end
  end

  defp endian(%{name: name} = codec) when is_map_key(@object_codecs, name) do
    with {:ok, config} <- Registry.to_v2(codec), do: {:ok, nil, [config]}
  end

  defp endian(%{name: name}), do: not_expressible("serializer #{inspect(name)}")

  defp to_v2_all(specs) do
    ExZarr.Result.map_ok(specs, fn spec ->
      case Registry.to_v2(spec) do
        {:error, {:not_in_zarr_v2, name}} -> not_expressible("codec #{inspect(name)}")
        result -> result
      end
    end)
  end

  defp not_expressible(why), do: {:error, {:not_expressible_in_v2, why}}
  defp invalid(why), do: {:error, {:invalid_metadata, why}}
end
