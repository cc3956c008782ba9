defmodule ExZarr.Codecs.Transpose do
  @moduledoc """
  The v3 `transpose` codec (array->array): permutes the chunk's axes. With
  `"order" => [2, 1, 0]` a C-order chunk is stored like numpy's F order, which is how a Zarr v2
  `order: "F"` array is read.

  The encoded chunk has shape `shape[order[i]]` along axis `i`.

      iex> spec = %{shape: {2, 3}, dtype: :uint8, fill_value: 0, decoded_size: nil}
      iex> {:ok, s} = ExZarr.Codecs.Transpose.init(%{"order" => [1, 0]}, spec)
      iex> ExZarr.Codecs.Transpose.encode(<<1, 2, 3, 4, 5, 6>>, s)
      {:ok, <<1, 4, 2, 5, 3, 6>>}
  """
  @behaviour ExZarr.Codec

  alias ExZarr.Codec.Config
  alias ExZarr.{DType, Native}

  @impl true
  def name, do: "transpose"

  @impl true
  def kind, do: :array_to_array

  @impl true
  def config_keys, do: ["order"]

  @impl true
  def init(config, %{shape: shape, dtype: dtype}) do
    n = tuple_size(shape)
    order = Config.get(config, "order")

    if is_list(order) and Enum.sort(order) === Enum.to_list(0..(n - 1)//1) do
      inverse = order |> Enum.with_index() |> Enum.sort() |> Enum.map(&elem(&1, 1))

      {:ok,
       %{
         order: order,
         perm: List.to_tuple(order),
         inverse: List.to_tuple(inverse),
         shape: shape,
         encoded_shape: permute(shape, order),
         itemsize: DType.itemsize(dtype)
       }}
    else
      if order == nil,
        do: {:error, {:missing_key, "order"}},
        else: Config.invalid("order", order, "a permutation of 0..#{n - 1}")
    end
  end

  @impl true
  def encode(data, s),
    do: Native.transpose(IO.iodata_to_binary(data), s.shape, s.itemsize, s.perm)

  @impl true
  def decode(data, s), do: Native.transpose(data, s.encoded_shape, s.itemsize, s.inverse)

  @impl true
  def configuration(%{order: order}), do: %{"order" => order}

  @impl true
  def resolve_spec(spec, %{encoded_shape: shape}), do: %{spec | shape: shape}

  @impl true
  def encoded_size(size, _state), do: size

  defp permute(shape, order), do: order |> Enum.map(&elem(shape, &1)) |> List.to_tuple()
end
