defmodule ExZarr.Codecs.Delta do
  @moduledoc """
  numcodecs Delta filter (v3 `numcodecs.delta`, v2 filter `delta`), array->array: stores the
  first element and then the difference of each element from the previous one (flattened C
  order), computed in `dtype` and stored as `astype` (default `dtype`). Decoding is the
  cumulative sum.

      iex> spec = %{shape: {3}, dtype: :int32, fill_value: 0, decoded_size: nil}
      iex> {:ok, s} = ExZarr.Codecs.Delta.init(%{"dtype" => "<i4", "astype" => "<i1"}, spec)
      iex> ExZarr.Codecs.Delta.encode(<<10::32-little, 11::32-little, 13::32-little>>, s)
      {:ok, <<10, 1, 2>>}
  """
  use ExZarr.Codecs.Numcodecs,
    name: "numcodecs.delta",
    v2_id: "delta",
    kind: :array_to_array,
    keys: ["dtype", "astype"]

  alias ExZarr.Codecs.Numcodecs
  alias ExZarr.Native

  @impl true
  def init(config, spec) do
    with {:ok, dtype, astype} <- Numcodecs.dtype_and_astype(config, spec) do
      if :bool in [dtype, astype],
        do: {:error, {:unsupported_dtype, :bool}},
        else: {:ok, %{dtype: dtype, astype: astype}}
    end
  end

  @impl true
  def resolve_spec(spec, s), do: %{spec | dtype: s.astype}

  @impl true
  def encode(data, s), do: Native.delta_encode(IO.iodata_to_binary(data), s.dtype, s.astype)

  @impl true
  def decode(data, s), do: Native.delta_decode(data, s.astype, s.dtype)

  @impl true
  def configuration(s), do: Numcodecs.dtype_and_astype_config(s)
end
