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

  @doc """
  `:ok` when the items of a chunk of `count` elements fit in memory (see
  `ExZarr.Limits.check_elements/3`).
  """
  @spec check_count(non_neg_integer()) :: :ok | {:error, term()}
  def check_count(count), do: ExZarr.Limits.check_elements(:chunk, count, 0)

  @doc """
  The layout of `items` (a list or a tuple in C order) as one binary, built natively in one
  pass after the checks of `check_items/3`; else their error.

      iex> {:ok, layout} = ExZarr.Codecs.VlenLayout.encode(["a", "bc", ""], 3, true)
      iex> Base.encode16(layout)
      "03000000010000006102000000626300000000"
      iex> ExZarr.Codecs.VlenLayout.encode(["a", 7], 2, false)
      {:error, {:invalid_item, 1, 7}}
  """
  @spec encode(term(), non_neg_integer(), boolean()) :: {:ok, binary()} | {:error, term()}
  def encode(items, expected, utf8?) when is_list(items) or is_tuple(items) do
    case ExZarr.Native.vlen_join(items, expected, utf8?) do
      {:ok, layout} -> {:ok, layout}
      {:error, reason} -> items_error(items, expected, reason)
    end
  end

  def encode(other, _expected, _utf8?), do: {:error, {:not_a_list, other}}

  @doc """
  Checks the items of a chunk (a list or a tuple): `expected` binaries, each shorter than
  4 GiB, and valid UTF-8 when `utf8?`. The error names the first bad item and its index.
  """
  @spec check_items(term(), non_neg_integer(), boolean()) :: :ok | {:error, term()}
  def check_items(items, expected, utf8?) when is_list(items) or is_tuple(items) do
    with {:error, reason} <- ExZarr.Native.vlen_check(items, expected, utf8?),
         do: items_error(items, expected, reason)
  end

  def check_items(other, _expected, _utf8?), do: {:error, {:not_a_list, other}}

  # The error of the native check, with the item or the count it is about.
  defp items_error(items, _expected, {:invalid_item, i}),
    do:
      {:error,
       {:invalid_item, i, if(is_tuple(items), do: elem(items, i), else: Enum.at(items, i))}}

  defp items_error(items, expected, :wrong_item_count) when is_tuple(items),
    do: {:error, {:wrong_item_count, expected: expected, got: tuple_size(items)}}

  defp items_error(items, expected, :wrong_item_count) do
    if List.improper?(items),
      do: {:error, {:not_a_list, items}},
      else: {:error, {:wrong_item_count, expected: expected, got: length(items)}}
  end

  defp items_error(items, _expected, :not_a_list), do: {:error, {:not_a_list, items}}

  @doc """
  Decodes the layout into a tuple of sub-binaries of `data` (no copies, in one native walk).
  The item count must be `expected`, every length must fit in what follows, nothing may
  follow the last item, and with `utf8?` every item must be UTF-8.

      iex> {:ok, layout} = ExZarr.Codecs.VlenLayout.encode(["a", "bc", ""], 3, false)
      iex> ExZarr.Codecs.VlenLayout.decode(layout, 3)
      {:ok, {"a", "bc", ""}}
  """
  @spec decode(binary(), non_neg_integer(), boolean()) :: {:ok, tuple()} | {:error, term()}
  def decode(data, expected, utf8? \\ false) when is_binary(data),
    do: explained(ExZarr.Native.vlen_split(data, expected, utf8?), data, expected)

  @doc """
  Checks the layout as `decode/3` does, without splitting it: `:ok` or `decode/3`'s error.

      iex> ExZarr.Codecs.VlenLayout.check(<<1::little-32, 1::little-32, "a">>, 1)
      :ok
      iex> ExZarr.Codecs.VlenLayout.check(<<2::little-32, 1::little-32, "a">>, 1)
      {:error, {:wrong_item_count, expected: 1, got: 2}}
  """
  @spec check(binary(), non_neg_integer(), boolean()) :: :ok | {:error, term()}
  def check(data, expected, utf8? \\ false) when is_binary(data),
    do: explained(ExZarr.Native.vlen_check_layout(data, expected, utf8?), data, expected)

  # The result of a native walk, with what is wrong when it found the layout malformed.
  defp explained({:error, :malformed_layout}, data, expected), do: why_malformed(data, expected)
  defp explained(result, _data, _expected), do: result

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
      def encode(items, %{count: count}), do: VlenLayout.encode(items, count, @vlen_utf8)

      @impl true
      def decode(data, %{count: count}), do: VlenLayout.decode(data, count, @vlen_utf8)

      @doc false
      # Checks the layout `decode/2` would split (see `ExZarr.Codec.Pipeline.decode_to_send/2`).
      def check_layout(data, %{count: count}), do: VlenLayout.check(data, count, @vlen_utf8)

      @impl true
      def configuration(_state), do: %{}

      @impl true
      def from_v2(_config), do: {:ok, %{}}

      @impl true
      def to_v2(_config), do: {:ok, %{"id" => @vlen_name}}
    end
  end
end
