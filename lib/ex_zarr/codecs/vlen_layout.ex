defmodule ExZarr.Codecs.VlenLayout do
  @moduledoc false
  # The variable-length item layout of the `vlen-utf8` and `vlen-bytes` codecs (numcodecs'
  # `VLenUTF8` / `VLenBytes`, zarr-python's v3 codecs of the same names): a u32 little-endian
  # item count, then for each item a u32 little-endian byte length and the bytes.
  #
  # Both codecs are array->bytes codecs whose array side is not a packed binary: `encode/2`
  # takes the chunk's items as a list (or tuple) of binaries in C order and `decode/2` returns
  # them as a tuple. `ExZarr.Codec.Pipeline` drives them; see `ExZarr.Codecs.VlenUtf8` and
  # `ExZarr.Codecs.VlenBytes`.

  @max_len 0xFFFFFFFF

  @doc """
  `:ok` when the items of a chunk of `count` elements fit in memory (see
  `ExZarr.Limits.check_elements/3`).
  """
  @spec check_count(non_neg_integer()) :: :ok | {:error, term()}
  def check_count(count), do: ExZarr.Limits.check_elements(:chunk, count, 0)

  @doc "The layout of `items`, as one binary (built in one pass, not an iolist of 2n parts)."
  @spec encode([binary()]) :: binary()
  def encode(items) do
    for item <- items,
        into: <<length(items)::little-32>>,
        do: <<byte_size(item)::little-32, item::binary>>
  end

  @doc """
  Decodes the layout into a tuple of sub-binaries of `data` (no copies, in one native walk).
  The item count must be `expected`, every length must fit in what follows, nothing may
  follow the last item, and with `utf8?` every item must be UTF-8.

      iex> iodata = ExZarr.Codecs.VlenLayout.encode(["a", "bc", ""])
      iex> IO.iodata_to_binary(iodata) |> Base.encode16()
      "03000000010000006102000000626300000000"
      iex> ExZarr.Codecs.VlenLayout.decode(IO.iodata_to_binary(iodata), 3)
      {:ok, {"a", "bc", ""}}
  """
  @spec decode(binary(), non_neg_integer(), boolean()) :: {:ok, tuple()} | {:error, term()}
  def decode(data, expected, utf8? \\ false) when is_binary(data) do
    case ExZarr.Native.vlen_split(data, expected, utf8?) do
      {:ok, items} -> {:ok, items}
      {:error, :malformed_layout} -> why_malformed(data, expected)
      {:error, :invalid_utf8} -> first_invalid(data, expected)
    end
  end

  defp first_invalid(data, expected) do
    {:ok, items} = ExZarr.Native.vlen_split(data, expected, false)
    {:error, {:invalid_utf8, Enum.find(Tuple.to_list(items), &(not String.valid?(&1)))}}
  end

  # What is wrong with a layout the native walk refused.
  defp why_malformed(<<count::little-32, rest::binary>>, expected) do
    cond do
      count != expected -> {:error, {:wrong_item_count, expected: expected, got: count}}
      count * 4 > byte_size(rest) -> {:error, {:truncated, item_count: count}}
      true -> walk(rest, count, 0, [])
    end
  end

  defp why_malformed(data, _expected), do: {:error, {:truncated, got: byte_size(data)}}

  defp walk(<<>>, count, count, acc), do: {:ok, acc |> :lists.reverse() |> List.to_tuple()}

  defp walk(rest, count, count, _acc), do: {:error, {:trailing_bytes, byte_size(rest)}}

  defp walk(<<len::little-32, item::binary-size(len), rest::binary>>, count, i, acc),
    do: walk(rest, count, i + 1, [item | acc])

  defp walk(_rest, _count, i, _acc), do: {:error, {:truncated, item: i}}

  @doc """
  Checks the items of one chunk before encoding: `expected` binaries, each shorter than
  4 GiB, and valid UTF-8 when `utf8?`. The error names the first bad item and its index.
  """
  @spec check_items(term(), non_neg_integer(), boolean()) :: {:ok, [binary()]} | {:error, term()}
  def check_items(items, expected, utf8?) when is_tuple(items),
    do: check_items(Tuple.to_list(items), expected, utf8?)

  def check_items(items, expected, utf8?) when is_list(items) do
    cond do
      List.improper?(items) ->
        {:error, {:not_a_list, items}}

      length(items) != expected ->
        {:error, {:wrong_item_count, expected: expected, got: length(items)}}

      i = Enum.find_index(items, &bad_item?(&1, utf8?)) ->
        {:error, {:invalid_item, i, Enum.at(items, i)}}

      true ->
        {:ok, items}
    end
  end

  def check_items(other, _expected, _utf8?), do: {:error, {:not_a_list, other}}

  defp bad_item?(item, _utf8?) when not is_binary(item) or byte_size(item) > @max_len, do: true
  defp bad_item?(item, true), do: not String.valid?(item)
  defp bad_item?(_item, false), do: false

  defmacro __using__(opts) do
    quote bind_quoted: [opts: opts] do
      @behaviour ExZarr.Codec
      alias ExZarr.Codecs.VlenLayout

      @vlen_name Keyword.fetch!(opts, :name)
      @vlen_dtype Keyword.fetch!(opts, :dtype)
      @vlen_utf8 Keyword.fetch!(opts, :utf8)

      @impl true
      def name, do: @vlen_name

      @impl true
      def v2_id, do: @vlen_name

      @impl true
      def kind, do: :array_to_bytes

      @impl true
      def config_keys, do: []

      @impl true
      def init(_config, %{shape: shape, dtype: dtype}) do
        count = ExZarr.Shape.product(shape)

        if dtype == @vlen_dtype do
          with :ok <- VlenLayout.check_count(count), do: {:ok, %{count: count}}
        else
          {:error,
           {:unsupported_codec,
            "#{@vlen_name} for #{inspect(dtype)} data (it takes #{inspect(@vlen_dtype)})"}}
        end
      end

      @impl true
      def encode(items, %{count: count}) do
        with {:ok, items} <- VlenLayout.check_items(items, count, @vlen_utf8),
             do: {:ok, VlenLayout.encode(items)}
      end

      @impl true
      def decode(data, %{count: count}), do: VlenLayout.decode(data, count, @vlen_utf8)

      @impl true
      def configuration(_state), do: %{}

      @impl true
      def from_v2(_config), do: {:ok, %{}}

      @impl true
      def to_v2(_config), do: {:ok, %{"id" => @vlen_name}}
    end
  end
end
