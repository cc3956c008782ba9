defmodule ExZarr.Codec.Chunk do
  @moduledoc """
  Where the encoded bytes of one chunk are, as `ExZarr.Codec.Pipeline` and the codecs read and
  write them: a value of a store (`"c/0/1"`), or a byte span of one (an inner chunk inside a
  shard). Byte ranges are relative to the chunk, clamped as `ExZarr.Storage.Range` does.

      iex> {:ok, store} = ExZarr.Storage.new(:memory, [])
      iex> :ok = ExZarr.Storage.put(store, "c/0", "0123456789")
      iex> chunk = ExZarr.Codec.Chunk.new(store, "c/0")
      iex> ExZarr.Codec.Chunk.get(ExZarr.Codec.Chunk.span(chunk, 4, 6), {2, 9})
      {:ok, "6789"}
  """

  alias ExZarr.Storage
  alias ExZarr.Storage.Range

  @enforce_keys [:storage, :key]
  defstruct [:storage, :key, span: nil]

  @typedoc """
  `key` names the chunk's value in `storage` (and the chunk in errors); `span` is the
  `{offset, size}` of the chunk inside that value (nil: all of it).
  """
  @type t :: %__MODULE__{
          storage: Storage.t(),
          key: String.t(),
          span: {non_neg_integer(), non_neg_integer()} | nil
        }

  @doc "The chunk stored under `key`."
  @spec new(Storage.t(), String.t()) :: t()
  def new(%Storage{} = storage, key), do: %__MODULE__{storage: storage, key: key}

  @doc "The `size` bytes at `offset` of a chunk, as a chunk of their own."
  @spec span(t(), non_neg_integer(), non_neg_integer()) :: t()
  def span(%__MODULE__{span: nil} = c, offset, size), do: %{c | span: {offset, size}}
  def span(%__MODULE__{span: {base, _}} = c, offset, size), do: %{c | span: {base + offset, size}}

  @doc "True when the chunk is a whole value of a store (caches and locks are keyed by it)."
  @spec stored_value?(t()) :: boolean()
  def stored_value?(%__MODULE__{span: span}), do: span == nil

  @doc "Reads the chunk, or a byte range of it; `{:error, :not_found}` when it is not stored."
  @spec get(t(), Storage.range()) :: {:ok, binary()} | {:error, term()}
  def get(chunk, range \\ nil)

  def get(%__MODULE__{span: nil} = c, range), do: Storage.get(c.storage, c.key, range)

  def get(%__MODULE__{span: span} = c, range),
    do: Storage.get(c.storage, c.key, within(span, range))

  @doc """
  Reads the whole chunk with the generation it was read from (nil when the store cannot tell,
  see "Generations" in `ExZarr.Storage`).
  """
  @spec get_with_generation(t()) :: {:ok, binary(), term()} | {:error, term()}
  def get_with_generation(chunk) do
    with {:ok, [bytes], generation} <- get_ranges_with_generation(chunk, [nil]),
         do: {:ok, bytes, generation}
  end

  @doc """
  Several byte ranges of the chunk and the generation of the stored object they were read
  from, all from that one; with `expected` not nil, only from that generation
  (`{:error, :generation_mismatch}` otherwise).
  """
  @spec get_ranges_with_generation(t(), [Storage.range()], term()) ::
          {:ok, [binary()], term()} | {:error, term()}
  def get_ranges_with_generation(chunk, ranges, expected \\ nil)

  def get_ranges_with_generation(%__MODULE__{span: nil} = c, ranges, expected),
    do: Storage.get_ranges_with_generation(c.storage, c.key, ranges, expected)

  def get_ranges_with_generation(%__MODULE__{span: span} = c, ranges, expected) do
    ranges = Enum.map(ranges, &within(span, &1))
    Storage.get_ranges_with_generation(c.storage, c.key, ranges, expected)
  end

  @doc """
  True when the stored chunk is still at `generation`: one cheap request (a read of no bytes
  on that condition, a HEAD on object stores). False for an unknown generation.
  """
  @spec current?(t(), term()) :: boolean()
  def current?(_chunk, nil), do: false

  def current?(chunk, generation),
    do: match?({:ok, _, _}, get_ranges_with_generation(chunk, [{0, 0}], generation))

  @doc """
  A term naming the stored object (`ExZarr.Storage.identity/2`), the same for every handle
  that reaches it, and the span of it the chunk is.
  """
  @spec identity(t()) :: term()
  def identity(%__MODULE__{storage: storage, key: key, span: span}),
    do: {Storage.identity(storage, key), span}

  @doc "True when byte ranges cost only their bytes (a store that serves ranges)."
  @spec ranges?(t()) :: boolean()
  def ranges?(%__MODULE__{storage: storage}), do: Storage.supports_ranges?(storage)

  @doc "Stores the chunk (a whole value of a store only)."
  @spec put(t(), iodata()) :: :ok | {:error, term()}
  def put(%__MODULE__{span: nil} = c, value), do: Storage.put(c.storage, c.key, value)

  @doc "Deletes the chunk (a whole value of a store only); a missing chunk is not an error."
  @spec delete(t()) :: :ok | {:error, term()}
  def delete(%__MODULE__{span: nil} = c), do: Storage.delete(c.storage, c.key)

  # A chunk-relative range as a range of the whole value.
  defp within({offset, size}, range) do
    {start, length} = Range.resolve(range, size)
    {offset + start, length}
  end
end
