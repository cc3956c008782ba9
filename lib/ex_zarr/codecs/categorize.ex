defmodule ExZarr.Codecs.Categorize do
  @moduledoc """
  numcodecs Categorize filter (v3 `numcodecs.categorize`, v2 filter `categorize`),
  array->array for fixed-length unicode chunks (numpy `<U n`, `{:fixed_utf32, n}`): stores
  each string as the number of its label (1 for the first of `labels`, 2 for the next, ...;
  0 for a string that is no label) in `astype` (an integer or float type, default `"|u1"`).
  Decoding gives back the labels, cut to `n` characters, and `""` for any other number.

  The configuration is numcodecs': `labels` (strings), `dtype` (the array's, `"<U n"`) and
  `astype`. As with numpy 2, encoding fails when `astype` cannot hold the number of the last
  label; decoding does not.

      iex> spec = %{shape: {4}, dtype: {:fixed_utf32, 1}, fill_value: "", decoded_size: nil}
      iex> config = %{"labels" => ["a", "b"], "dtype" => "<U1"}
      iex> {:ok, s} = ExZarr.Codecs.Categorize.init(config, spec)
      iex> {:ok, packed} = ExZarr.DType.Strings.pack(["b", "a", "z", "b"], {:fixed_utf32, 1})
      iex> {:ok, codes} = ExZarr.Codecs.Categorize.encode(packed, s)
      iex> codes
      <<2, 1, 0, 2>>
      iex> {:ok, back} = ExZarr.Codecs.Categorize.decode(codes, s)
      iex> ExZarr.DType.Strings.unpack(back, {:fixed_utf32, 1})
      {:ok, ["b", "a", "", "b"]}
  """
  use ExZarr.Codecs.Numcodecs,
    name: "numcodecs.categorize",
    v2_id: "categorize",
    kind: :array_to_array,
    keys: ["labels", "dtype", "astype"]

  alias ExZarr.Codec.Config
  alias ExZarr.Codecs.Numcodecs
  alias ExZarr.{DType, Shape}

  @impl true
  def init(config, spec) do
    with {:ok, chars} <- string_width(spec),
         {:ok, labels} <- labels(config),
         :ok <- check_dtype(config, chars),
         {:ok, astype} <- astype(config) do
      width = 4 * chars
      zero = :binary.copy(<<0>>, DType.itemsize(astype))
      codes = Enum.map(1..length(labels)//1, &code(astype, &1))
      table = encode_table(labels, codes, width)
      fill = Map.get(table, DType.fill_element(spec.dtype, spec.fill_value), zero)

      {:ok,
       %{
         labels: labels,
         chars: chars,
         astype: astype,
         n: Shape.product(spec.shape),
         zero: zero,
         codes: table,
         strings: decode_table(labels, codes, width),
         encodable?: Enum.all?(codes, &(&1 != :overflow)),
         fill: DType.element_value(astype, fill)
       }}
    end
  end

  defp string_width(%{dtype: {:fixed_utf32, chars}}), do: {:ok, chars}
  defp string_width(spec), do: {:error, {:unsupported_dtype, Map.get(spec, :dtype)}}

  defp labels(config) do
    case Config.fetch(config, "labels") do
      {:ok, labels} when is_list(labels) ->
        if Enum.all?(labels, &(is_binary(&1) and String.valid?(&1))),
          do: {:ok, labels},
          else: Config.invalid("labels", labels, "a list of strings")

      {:ok, other} ->
        Config.invalid("labels", other, "a list of strings")

      :error ->
        {:error, {:missing_key, "labels"}}
    end
  end

  defp check_dtype(config, chars) do
    expected = "the array's data type \"<U#{chars}\""

    case Config.fetch(config, "dtype") do
      {:ok, s} when is_binary(s) ->
        case DType.from_v2(s) do
          {:ok, {:fixed_utf32, ^chars}, _endian} -> :ok
          _ -> Config.invalid("dtype", s, expected)
        end

      {:ok, other} ->
        Config.invalid("dtype", other, expected)

      :error ->
        {:error, {:missing_key, "dtype"}}
    end
  end

  defp astype(config) do
    with {:ok, astype} <- Numcodecs.dtype_option(config, "astype", %{dtype: :uint8}) do
      if astype == :bool,
        do: Config.invalid("astype", Config.get(config, "astype"), "an integer or float type"),
        else: {:ok, astype}
    end
  end

  # The stored form of label number `i`, or :overflow when `astype` cannot hold it.
  defp code(astype, i) do
    if DType.float?(astype) do
      DType.fill_element(astype, i * 1.0)
    else
      {min, max} = DType.int_range(astype)
      if i in min..max, do: DType.fill_element(astype, i), else: :overflow
    end
  end

  # Element -> stored number. A label longer than the elements equals none of them; of equal
  # labels the last one counts (as numcodecs assigns the numbers in order).
  defp encode_table(labels, codes, width) do
    for {label, code} <- Enum.zip(labels, codes),
        byte_size(ucs4(label)) <= width,
        into: %{},
        do: {utf32(label, width), code}
  end

  # Stored number -> element. Numbers a float type cannot hold exactly round, and the last
  # label whose number rounds to a stored one wins, as in numcodecs (numpy compares the
  # stored numbers with the label numbers cast to `astype`).
  defp decode_table(labels, codes, width) do
    for {label, code} <- Enum.zip(labels, codes),
        code != :overflow,
        into: %{},
        do: {code, utf32(label, width)}
  end

  # A label as an element of `width` bytes: cut to the width (numpy truncates on assignment),
  # padded with zero code points.
  defp utf32(label, width) do
    ucs4 = ucs4(label)
    kept = binary_part(ucs4, 0, min(byte_size(ucs4), width))
    kept <> :binary.copy(<<0>>, width - byte_size(kept))
  end

  defp ucs4(label), do: :unicode.characters_to_binary(label, :utf8, {:utf32, :little})

  @impl true
  def resolve_spec(spec, s), do: %{spec | dtype: s.astype, fill_value: s.fill}

  @impl true
  def encode(_data, %{encodable?: false} = s),
    do: {:error, {:categorize, {:too_many_labels, length(s.labels), s.astype}}}

  def encode(data, s) do
    width = 4 * s.chars
    codes = s.codes
    zero = s.zero

    case IO.iodata_to_binary(data) do
      bin when byte_size(bin) == s.n * width ->
        {:ok, for(<<e::binary-size(width) <- bin>>, into: <<>>, do: Map.get(codes, e, zero))}

      bin ->
        {:error, {:categorize, {:size, byte_size(bin), s.n * width}}}
    end
  end

  @impl true
  def decode(data, s) do
    size = byte_size(s.zero)
    empty = :binary.copy(<<0>>, 4 * s.chars)
    strings = s.strings

    if byte_size(data) == s.n * size,
      do:
        {:ok, for(<<c::binary-size(size) <- data>>, into: <<>>, do: Map.get(strings, c, empty))},
      else: {:error, {:categorize, {:size, byte_size(data), s.n * size}}}
  end

  @impl true
  def configuration(s) do
    %{
      "labels" => s.labels,
      "dtype" => "<U#{s.chars}",
      "astype" => Numcodecs.numpy_dtype(s.astype)
    }
  end
end
