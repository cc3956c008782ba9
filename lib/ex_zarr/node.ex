defmodule ExZarr.Node do
  @moduledoc """
  Reads and writes the metadata documents of a node (array or group) at a path in a store:
  `zarr.json` for Zarr v3, `.zarray` / `.zgroup` / `.zattrs` for Zarr v2.
  """

  alias ExZarr.{Metadata, Result, Storage}
  alias ExZarr.Metadata.{V2, V3}

  @doc """
  Reads the array metadata at `prefix`, detecting the format (v3 `zarr.json` first, then v2
  `.zarray`). `{:error, :not_found}` when neither exists.
  """
  @spec read_array_metadata(Storage.t(), String.t()) :: {:ok, Metadata.t()} | {:error, term()}
  def read_array_metadata(storage, prefix) do
    case Storage.get(storage, key(prefix, "zarr.json")) do
      {:ok, json} ->
        with {:ok, doc} <- decode_json(json, "zarr.json"), do: V3.decode(doc)

      {:error, :not_found} ->
        read_v2_array(storage, prefix)

      error ->
        error
    end
  end

  defp read_v2_array(storage, prefix) do
    with {:ok, json} <- Storage.get(storage, key(prefix, ".zarray")),
         {:ok, zarray} <- decode_json(json, ".zarray"),
         {:ok, zattrs} <- read_optional_json(storage, key(prefix, ".zattrs")) do
      V2.decode(zarray, zattrs)
    end
  end

  @doc "Writes the metadata documents of an array at `prefix`."
  @spec write_array_metadata(Storage.t(), String.t(), Metadata.t()) :: :ok | {:error, term()}
  def write_array_metadata(storage, prefix, %Metadata{} = meta) do
    with {:ok, documents} <- Metadata.to_documents(meta) do
      Result.each_ok(documents, fn {name, json} ->
        Storage.put(storage, key(prefix, name), json)
      end)
    end
  end

  @doc "True when an array or group is stored at `prefix` (either format)."
  @spec exists?(Storage.t(), String.t()) :: boolean()
  def exists?(storage, prefix) do
    Enum.any?(["zarr.json", ".zarray", ".zgroup"], fn name ->
      match?({:ok, _}, Storage.get(storage, key(prefix, name), {0, 0}))
    end)
  end

  @doc """
  Deletes every key of the node at `prefix` and below (the whole store for "").
  """
  @spec delete_tree(Storage.t(), String.t()) :: :ok | {:error, term()}
  def delete_tree(storage, prefix) do
    with {:ok, keys} <- Storage.list(storage, prefix) do
      Result.each_ok(keys, &Storage.delete(storage, &1))
    end
  end

  @doc "Joins a node path and a name into a store key."
  @spec key(String.t(), String.t()) :: String.t()
  def key("", name), do: name
  def key(prefix, name), do: prefix <> "/" <> name

  defp decode_json(json, name) do
    case Metadata.decode_json(json) do
      {:ok, doc} -> {:ok, doc}
      {:error, {:invalid_json, reason}} -> {:error, {:invalid_json, name, reason}}
    end
  end

  defp read_optional_json(storage, key) do
    case Storage.get(storage, key) do
      {:ok, json} -> decode_json(json, key)
      {:error, :not_found} -> {:ok, nil}
      error -> error
    end
  end
end
