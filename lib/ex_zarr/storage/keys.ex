defmodule ExZarr.Storage.Keys do
  @moduledoc """
  Key helpers: joining a node path and a name (`join/2`), and for the storage backends prefix
  selection for `list` and turning a put's iodata into the single binary that key-value
  backends store (not pinning a larger one).

  A prefix selects keys *below* it as a path: `"a"` (or `"a/"`) selects `"a/b"` and `"a/b/c"`
  but neither `"a"` itself nor `"ab"`; `""` selects every key. This matches zarr-python's
  `LocalStore.list_prefix` and S3 listings with a `"a/"` prefix.

      iex> ExZarr.Storage.Keys.under(["a/b", "ab", "a/c/d", "a"], "a")
      ["a/b", "a/c/d"]
  """

  @doc """
  Joins a node path (`""` for the root) and a name into a store key.

      iex> ExZarr.Storage.Keys.join("", "zarr.json")
      "zarr.json"
      iex> ExZarr.Storage.Keys.join("a/b", "c/0")
      "a/b/c/0"
  """
  @spec join(String.t(), String.t()) :: String.t()
  def join("", name), do: name
  def join(prefix, name), do: prefix <> "/" <> name

  @doc "The keys below `prefix`, sorted."
  @spec under(Enumerable.t(), String.t()) :: [String.t()]
  def under(keys, ""), do: Enum.sort(keys)

  def under(keys, prefix) do
    dir = String.trim_trailing(prefix, "/") <> "/"
    keys |> Enum.filter(&String.starts_with?(&1, dir)) |> Enum.sort()
  end

  @doc """
  The prefix as a directory path with a trailing `/` (`""` for the root), as object stores
  expect in listings.

      iex> ExZarr.Storage.Keys.dir_prefix("a/b")
      "a/b/"
  """
  @spec dir_prefix(String.t()) :: String.t()
  def dir_prefix(""), do: ""
  def dir_prefix(prefix), do: String.trim_trailing(prefix, "/") <> "/"

  @doc """
  Joins iodata into one binary (a binary is returned as is).
  Anything that is not iodata gives `{:error, {:invalid_value, :not_iodata}}`.
  """
  @spec to_binary(term()) :: {:ok, binary()} | {:error, {:invalid_value, :not_iodata}}
  def to_binary(value) when is_binary(value), do: {:ok, value}

  def to_binary(value) when is_list(value) do
    {:ok, IO.iodata_to_binary(value)}
  rescue
    ArgumentError -> {:error, {:invalid_value, :not_iodata}}
  end

  def to_binary(_value), do: {:error, {:invalid_value, :not_iodata}}

  @doc """
  Like `to_binary/1`, for values that a store keeps in memory: a binary that is part of a
  larger one (a sub-binary, as `binary_part/3` makes) is copied, so that keeping the value
  does not keep the larger binary alive. Any other binary is kept as it is (no copy).

      iex> big = :binary.copy("x", 1000)
      iex> {:ok, small} = ExZarr.Storage.Keys.to_owned_binary(binary_part(big, 0, 100))
      iex> :binary.referenced_byte_size(small)
      100
  """
  @spec to_owned_binary(term()) :: {:ok, binary()} | {:error, {:invalid_value, :not_iodata}}
  def to_owned_binary(value) do
    with {:ok, binary} <- to_binary(value), do: {:ok, owned(binary)}
  end

  @doc "The binary, copied when it is part of a larger one (see `to_owned_binary/1`)."
  @spec owned(binary()) :: binary()
  def owned(binary) when is_binary(binary) do
    if :binary.referenced_byte_size(binary) > byte_size(binary),
      do: :binary.copy(binary),
      else: binary
  end
end
