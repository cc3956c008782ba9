defmodule ExZarr do
  @moduledoc """
  Zarr (format v2 and v3) arrays for Elixir: chunked, compressed N-dimensional arrays that
  zarr-python, tensorstore and zarrs read and write too.

      {:ok, array} =
        ExZarr.create(shape: {1000, 1000}, chunks: {100, 100}, dtype: :float64,
                      storage: :filesystem, path: "/tmp/a.zarr", compressor: %{id: "gzip", level: 5})
      :ok = ExZarr.Array.set_slice(array, data, start: {0, 0}, stop: {10, 1000})
      {:ok, array} = ExZarr.open(path: "/tmp/a.zarr")
      {:ok, bin} = ExZarr.Array.get_slice(array, start: {0, 0}, stop: {10, 1000})

  Storage is chosen with `storage:` (`:memory`, `:filesystem`, ...) and the backend's options
  beside it; `path:` alone means the filesystem, and a `"file://"` URL is accepted as a path.
  """

  alias ExZarr.{Array, Metadata, Node, Storage}

  @array_opts [:prefix, :write_empty_chunks]

  @doc """
  Creates an array and writes its metadata. Options: `shape`, `chunks`, `dtype`,
  `zarr_format` (3 by default), `fill_value`, `compressor` (numcodecs-style map or `nil`),
  `filters`, `codecs` (explicit v3 pipeline), `order`, `endian`, `dimension_separator`,
  `chunk_key_encoding`, `attributes`, `dimension_names`, `write_empty_chunks`,
  `overwrite` (default false: an existing node is an error; true deletes it and all its
  chunks first), plus the storage options.
  """
  @spec create(keyword()) :: {:ok, Array.t()} | {:error, term()}
  def create(opts) do
    prefix = Keyword.get(opts, :prefix, "")

    with {:ok, meta} <- Metadata.new(opts),
         {:ok, storage} <- storage(opts),
         :ok <- check_absent(storage, prefix, opts),
         {:ok, array} <- Array.new(meta, storage, Keyword.take(opts, @array_opts)),
         :ok <- Node.write_array_metadata(storage, prefix, meta) do
      {:ok, array}
    end
  end

  @doc """
  Opens an existing array (v2 or v3, detected). Takes the storage options and `prefix`
  (the array's path inside the store), and `write_empty_chunks`.
  """
  @spec open(keyword()) :: {:ok, Array.t()} | {:error, term()}
  def open(opts) do
    prefix = Keyword.get(opts, :prefix, "")

    with {:ok, storage} <- storage(opts),
         {:ok, meta} <- Node.read_array_metadata(storage, prefix) do
      Array.new(meta, storage, Keyword.take(opts, @array_opts))
    end
  end

  @doc "Like `create/1` but raises `ExZarr.Error`."
  @spec create!(keyword()) :: Array.t()
  def create!(opts), do: bang(create(opts))

  @doc "Like `open/1` but raises `ExZarr.Error`."
  @spec open!(keyword()) :: Array.t()
  def open!(opts), do: bang(open(opts))

  @doc """
  Opens the storage described by options: `storage: %ExZarr.Storage{}` is used as is;
  `storage: name` with the backend's options; `path:` alone means `:filesystem`
  (a `"file://"` URL is accepted); nothing means `:memory`.
  """
  @spec storage(keyword()) :: {:ok, Storage.t()} | {:error, term()}
  def storage(opts) do
    case {Keyword.get(opts, :storage), Keyword.get(opts, :path)} do
      {%Storage{} = storage, _} -> {:ok, storage}
      {nil, nil} -> Storage.new(:memory, opts)
      {nil, "file://" <> path} -> Storage.new(:filesystem, Keyword.put(opts, :path, path))
      {nil, _path} -> Storage.new(:filesystem, opts)
      {backend, _} -> Storage.new(backend, opts)
    end
  end

  # An existing node is an error, or with `overwrite: true` is removed with all its chunks.
  defp check_absent(storage, prefix, opts) do
    cond do
      not Node.exists?(storage, prefix) -> :ok
      Keyword.get(opts, :overwrite, false) -> Node.delete_tree(storage, prefix)
      true -> {:error, {:already_exists, prefix}}
    end
  end

  defp bang({:ok, v}), do: v
  defp bang({:error, reason}), do: raise(ExZarr.Error, reason: reason)
end
