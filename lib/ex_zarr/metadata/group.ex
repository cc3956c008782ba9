defmodule ExZarr.Metadata.Group do
  @moduledoc """
  The metadata of a Zarr group: its format, its user attributes and, when the group carries
  consolidated metadata, the metadata documents of every node below it.

  A v3 group is one `zarr.json` (`{"zarr_format": 3, "node_type": "group", "attributes": ...}`,
  with zarr-python's inline `consolidated_metadata` when consolidated); a v2 group is
  `.zgroup` (`{"zarr_format": 2}`) plus an optional `.zattrs`, and its consolidated metadata
  lives in a separate `.zmetadata` (see `ExZarr.Metadata.Consolidated`).

  Fields:

    * `zarr_format`: 2 or 3
    * `attributes`: user attributes (a map of JSON values, `nil` for JSON null)
    * `consolidated`: `nil`, or the consolidated documents as a map from store key relative
      to the group (`"sub/arr/zarr.json"`, `"sub/arr/.zarray"`) to decoded JSON

      iex> {:ok, meta} = ExZarr.Metadata.Group.decode_v3(%{"zarr_format" => 3, "node_type" => "group"})
      iex> {meta.zarr_format, meta.attributes, meta.consolidated}
      {3, %{}, nil}
  """

  alias ExZarr.{JSON, Metadata}
  alias ExZarr.Metadata.Consolidated

  defstruct zarr_format: 3, attributes: %{}, consolidated: nil

  @type t :: %__MODULE__{
          zarr_format: 2 | 3,
          attributes: map(),
          consolidated: Consolidated.entries() | nil
        }

  @v3_keys ~w(zarr_format node_type attributes consolidated_metadata)

  @doc """
  Decodes a v3 group `zarr.json` (as decoded by jiffy). Unknown keys are accepted only when
  they are objects marked `"must_understand": false`, as the v3 specification requires.
  """
  @spec decode_v3(term()) :: {:ok, t()} | {:error, term()}
  def decode_v3(%{"zarr_format" => 3, "node_type" => "group"} = doc) do
    with :ok <- check_extensions(doc),
         {:ok, attributes} <- attributes(Map.get(doc, "attributes", %{})),
         {:ok, consolidated} <- Consolidated.from_v3(Map.get(doc, "consolidated_metadata")) do
      {:ok, %__MODULE__{zarr_format: 3, attributes: attributes, consolidated: consolidated}}
    end
  end

  def decode_v3(%{"zarr_format" => 3, "node_type" => "array"}), do: {:error, :not_a_group}
  def decode_v3(_doc), do: invalid("a v3 group zarr.json needs zarr_format 3, node_type group")

  @doc """
  Decodes a v2 group from its `.zgroup` and `.zattrs` (`nil` when absent) documents.
  zarr-python 3 may write a `consolidated_metadata` key into `.zgroup`; it is ignored here
  (v2 consolidated metadata is read from `.zmetadata`).
  """
  @spec decode_v2(term(), term()) :: {:ok, t()} | {:error, term()}
  def decode_v2(%{"zarr_format" => 2}, zattrs) do
    with {:ok, attributes} <- attributes(zattrs || %{}) do
      {:ok, %__MODULE__{zarr_format: 2, attributes: attributes}}
    end
  end

  def decode_v2(_zgroup, _zattrs), do: invalid(".zgroup must be {\"zarr_format\": 2}")

  @doc """
  The documents that store a group, as `[{name, json_binary}]`: `zarr.json` for v3 (with the
  consolidated metadata inline when present), `.zgroup` and `.zattrs` for v2.

      iex> ExZarr.Metadata.Group.to_documents(%ExZarr.Metadata.Group{zarr_format: 2})
      [{".zgroup", ~s({\\n  "zarr_format": 2\\n})}, {".zattrs", "{}"}]
  """
  @spec to_documents(t()) :: [{String.t(), binary()}]
  def to_documents(%__MODULE__{zarr_format: 3} = meta) do
    doc = %{
      "zarr_format" => 3,
      "node_type" => "group",
      "attributes" => Metadata.attributes_to_json(meta.attributes)
    }

    doc =
      case meta.consolidated do
        nil -> doc
        entries -> Map.put(doc, "consolidated_metadata", Consolidated.to_v3(entries))
      end

    [{"zarr.json", JSON.encode(doc)}]
  end

  def to_documents(%__MODULE__{zarr_format: 2} = meta) do
    [
      {".zgroup", JSON.encode(%{"zarr_format" => 2})},
      {".zattrs", JSON.encode(Metadata.attributes_to_json(meta.attributes))}
    ]
  end

  defp check_extensions(doc) do
    case Enum.find(Map.keys(doc), &(&1 not in @v3_keys and not optional_extension?(doc[&1]))) do
      nil -> :ok
      key -> {:error, {:unsupported_extension, key}}
    end
  end

  defp optional_extension?(%{"must_understand" => false}), do: true
  defp optional_extension?(_value), do: false

  defp attributes(%{} = attrs), do: {:ok, Metadata.attributes_from_json(attrs)}
  defp attributes(_other), do: invalid("attributes must be a JSON object")

  defp invalid(why), do: {:error, {:invalid_metadata, why}}
end
