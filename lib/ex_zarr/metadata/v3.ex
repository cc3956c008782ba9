defmodule ExZarr.Metadata.V3 do
  @moduledoc """
  Zarr v3 array metadata (`zarr.json`) <-> `ExZarr.Metadata`.

  `decode/1` takes the JSON object as decoded by jiffy (`:jiffy.decode(bin, [:return_maps])`:
  string keys, `:null` for null) and validates every field of the v3 core specification.
  `encode/1` gives back such a map, with the keys zarr-python writes.

      iex> {:ok, meta} =
      ...>   ExZarr.Metadata.V3.decode(%{
      ...>     "zarr_format" => 3,
      ...>     "node_type" => "array",
      ...>     "shape" => [10],
      ...>     "data_type" => "int32",
      ...>     "chunk_grid" => %{"name" => "regular", "configuration" => %{"chunk_shape" => [5]}},
      ...>     "chunk_key_encoding" => %{"name" => "default"},
      ...>     "fill_value" => 0,
      ...>     "codecs" => [%{"name" => "bytes", "configuration" => %{"endian" => "little"}}]
      ...>   })
      iex> {meta.shape, meta.chunks, meta.dtype}
      {{10}, {5}, :int32}
  """

  alias ExZarr.{ChunkGrid, DType}
  alias ExZarr.Metadata

  @known_keys ~w(zarr_format node_type shape data_type chunk_grid chunk_key_encoding fill_value
                 codecs attributes storage_transformers dimension_names)

  @doc """
  Decodes a `zarr.json` array document.

  Errors: `:not_an_array` for a group, `{:unsupported_extension, name}` for an unknown field or
  extension (chunk grid, chunk key encoding, storage transformer) not marked
  `"must_understand": false`, `{:unsupported_dtype, name}`, `{:invalid_fill_value, dtype, json}`,
  `{:invalid_metadata, why}` for anything malformed, and the limits of `ExZarr.Limits`
  (`{:too_many_dimensions, n, max: 64}`, `{:too_large, what, size, max}`).
  """
  @spec decode(term()) :: {:ok, Metadata.t()} | {:error, term()}
  def decode(%{} = json) do
    with :ok <- check_format(json),
         :ok <- check_node_type(json),
         :ok <- check_unknown_keys(json),
         {:ok, shape} <- Metadata.field(json, "shape", &shape/1),
         {:ok, dtype} <- Metadata.field(json, "data_type", &data_type/1),
         {:ok, chunks} <- Metadata.field(json, "chunk_grid", &chunk_grid(&1, shape)),
         :ok <- Metadata.check_bounds(shape, ChunkGrid.max_shape(chunks), dtype),
         {:ok, key_encoding} <- Metadata.field(json, "chunk_key_encoding", &key_encoding/1),
         {:ok, fill} <- Metadata.field(json, "fill_value", &DType.decode_fill(dtype, &1, 3)),
         {:ok, codecs} <- Metadata.field(json, "codecs", &codecs/1),
         {:ok, attributes} <- attributes(Map.get(json, "attributes", %{})),
         {:ok, transformers} <- transformers(Map.get(json, "storage_transformers", [])),
         {:ok, names} <- dimension_names(Map.get(json, "dimension_names", :null), shape) do
      {:ok,
       %Metadata{
         zarr_format: 3,
         shape: List.to_tuple(shape),
         chunks: chunks,
         dtype: dtype,
         fill_value: fill,
         codecs: codecs,
         chunk_key_encoding: key_encoding,
         attributes: attributes,
         dimension_names: names,
         storage_transformers: transformers
       }}
    end
  end

  def decode(_json), do: invalid("zarr.json must be a JSON object")

  defp check_format(%{"zarr_format" => 3}), do: :ok

  defp check_format(%{"zarr_format" => f}),
    do: invalid("zarr_format must be 3, got #{inspect(f)}")

  defp check_format(_json), do: invalid("zarr_format is missing")

  defp check_node_type(%{"node_type" => "array"}), do: :ok
  defp check_node_type(%{"node_type" => "group"}), do: {:error, :not_an_array}
  defp check_node_type(%{"node_type" => t}), do: invalid("unknown node_type #{inspect(t)}")
  defp check_node_type(_json), do: invalid("node_type is missing")

  defp check_unknown_keys(json) do
    json
    |> Map.drop(@known_keys)
    |> Enum.sort()
    |> Enum.find(fn {_key, value} -> not optional_extension?(value) end)
    |> case do
      nil -> :ok
      {key, _} -> {:error, {:unsupported_extension, key}}
    end
  end

  defp optional_extension?(%{"must_understand" => false}), do: true
  defp optional_extension?(_value), do: false

  defp shape(shape) do
    if non_neg_ints?(shape),
      do: {:ok, shape},
      else: invalid("shape must be a list of non-negative integers, got #{inspect(shape)}")
  end

  defp non_neg_ints?(list),
    do: is_list(list) and Enum.all?(list, &(is_integer(&1) and &1 >= 0))

  defp data_type(name) when is_binary(name), do: DType.from_v3(name)

  # Parameterised types (fixed-length strings, datetimes, structured) are objects.
  defp data_type(%{"name" => name} = object) when is_binary(name), do: DType.from_v3(object)

  defp data_type(other), do: invalid("data_type must be a name, got #{inspect(other)}")

  defp chunk_grid(grid, shape) do
    with {:ok, "regular", config} <- extension(grid, "chunk_grid"),
         :ok <- known_keys(config, ["chunk_shape"], "chunk_grid configuration"),
         {:ok, chunks} <- config_value(config, "chunk_shape", "chunk_grid") do
      cond do
        not (non_neg_ints?(chunks) and Enum.all?(chunks, &(&1 > 0))) ->
          invalid("chunk_shape must be a list of positive integers, got #{inspect(chunks)}")

        length(chunks) != length(shape) ->
          invalid("chunk_shape #{inspect(chunks)} and shape #{inspect(shape)} differ in length")

        true ->
          {:ok, List.to_tuple(chunks)}
      end
    else
      {:ok, "rectilinear", config} -> ChunkGrid.from_json(config, shape)
      {:ok, name, _config} -> {:error, {:unsupported_extension, name}}
      error -> error
    end
  end

  defp key_encoding(encoding) do
    with {:ok, name, config} <- extension(encoding, "chunk_key_encoding"),
         {:ok, default} <- default_separator(name),
         :ok <- known_keys(config, ["separator"], "chunk_key_encoding configuration") do
      case Map.get(config, "separator", default) do
        sep when sep in ["/", "."] -> {:ok, %{name: name, separator: sep}}
        sep -> invalid("chunk key separator must be \"/\" or \".\", got #{inspect(sep)}")
      end
    end
  end

  defp default_separator("default"), do: {:ok, "/"}
  defp default_separator("v2"), do: {:ok, "."}
  defp default_separator(name), do: {:error, {:unsupported_extension, name}}

  # An extension object: a name, or {"name", "configuration"?, "must_understand"?}.
  defp extension(name, _field) when is_binary(name), do: {:ok, name, %{}}

  defp extension(%{"name" => name} = object, field) when is_binary(name) do
    with :ok <- known_keys(object, ["name", "configuration", "must_understand"], field) do
      case Map.get(object, "configuration", %{}) do
        %{} = config -> {:ok, name, config}
        other -> invalid("#{field} configuration must be an object, got #{inspect(other)}")
      end
    end
  end

  defp extension(other, field),
    do: invalid("#{field} must be a named object, got #{inspect(other)}")

  defp known_keys(object, known, field) do
    case object |> Map.keys() |> Enum.reject(&(&1 in known)) |> Enum.sort() do
      [] -> :ok
      [key | _] -> invalid("#{field} has an unknown key #{inspect(key)}")
    end
  end

  defp config_value(config, key, field) do
    case Map.fetch(config, key) do
      {:ok, value} -> {:ok, value}
      :error -> invalid("#{field} configuration has no #{key}")
    end
  end

  defp codecs([_ | _] = list) do
    ExZarr.Result.map_ok(list, fn codec ->
      with {:ok, name, config} <- extension(codec, "codec"),
           do: {:ok, %{name: name, configuration: config}}
    end)
  end

  defp codecs(other), do: invalid("codecs must be a non-empty list, got #{inspect(other)}")

  defp attributes(%{} = attributes), do: {:ok, Metadata.attributes_from_json(attributes)}
  defp attributes(other), do: invalid("attributes must be an object, got #{inspect(other)}")

  defp transformers(list) when is_list(list) do
    ExZarr.Result.map_ok(list, fn transformer ->
      with {:ok, name, _config} <- extension(transformer, "storage transformer") do
        if optional_extension?(transformer),
          do: {:ok, transformer},
          else: {:error, {:unsupported_extension, name}}
      end
    end)
  end

  defp transformers(other),
    do: invalid("storage_transformers must be a list, got #{inspect(other)}")

  defp dimension_names(null, _shape) when null in [nil, :null], do: {:ok, nil}

  defp dimension_names(names, shape) when is_list(names) and length(names) == length(shape) do
    if Enum.all?(names, &(is_binary(&1) or &1 in [nil, :null])),
      do: {:ok, Enum.map(names, &if(&1 == :null, do: nil, else: &1))},
      else: invalid("dimension_names must be strings or null, got #{inspect(names)}")
  end

  defp dimension_names(names, _shape),
    do:
      invalid(
        "dimension_names must be a list with one entry per dimension, got #{inspect(names)}"
      )

  defp invalid(why), do: {:error, {:invalid_metadata, why}}

  @doc """
  Encodes metadata as the `zarr.json` object zarr-python writes (string keys, `:null` for
  null), ready for `ExZarr.JSON.encode/1`. A codec with an empty configuration is
  written as `{"name": ...}` alone, as zarr-python does for `bytes` on one-byte types (but
  `vlen-utf8` and `vlen-bytes`, which it writes with `"configuration": {}`).

      iex> {:ok, meta} = ExZarr.Metadata.new(shape: {4}, dtype: :uint8, compressor: nil)
      iex> ExZarr.Metadata.V3.encode(meta)["codecs"]
      [%{"name" => "bytes"}]
  """
  @spec encode(Metadata.t()) :: map()
  def encode(%Metadata{} = meta) do
    %{
      "zarr_format" => 3,
      "node_type" => "array",
      "shape" => Tuple.to_list(meta.shape),
      "data_type" => DType.to_v3(meta.dtype),
      "chunk_grid" => ChunkGrid.to_json(meta.chunks),
      "chunk_key_encoding" => %{
        "name" => meta.chunk_key_encoding.name,
        "configuration" => %{"separator" => meta.chunk_key_encoding.separator}
      },
      "fill_value" => DType.encode_fill(meta.dtype, meta.fill_value, 3),
      "codecs" => Enum.map(meta.codecs, &ExZarr.Codec.to_json/1),
      "attributes" => Metadata.attributes_to_json(meta.attributes),
      "storage_transformers" => meta.storage_transformers
    }
    |> put_dimension_names(meta.dimension_names)
  end

  defp put_dimension_names(json, nil), do: json

  defp put_dimension_names(json, names),
    do: Map.put(json, "dimension_names", Enum.map(names, &(&1 || :null)))
end
