defmodule ExZarr.DType.PropertiesTest do
  use ExUnit.Case, async: true

  alias ExZarr.Codecs.VlenLayout
  alias ExZarr.DType
  alias ExZarr.DType.{Datetime, Strings}
  alias ExZarr.Test.Prop

  import :proper_types, only: [list: 1, integer: 2, binary: 0, elements: 1, vector: 2, tuple: 1]

  # Code points of every UTF-8 length, but not U+0000 (a padding unit in UCS4 strings).
  defp code_point,
    do: elements([?a, ?z, 0x7F, 0xE9, 0x7FF, 0x800, 0x65E5, 0xFFFD, 0x10000, 0x10FFFF])

  test "fixed-length strings: unpack(pack(strings)) == strings" do
    Prop.check(
      tuple([integer(1, 5), list(vector(3, code_point()))]),
      fn {n, lists} ->
        strings = Enum.map(lists, &(&1 |> Enum.take(n) |> List.to_string()))
        {:ok, packed} = Strings.pack(strings, {:fixed_utf32, n})

        byte_size(packed) == 4 * n * length(strings) and
          Strings.unpack(packed, {:fixed_utf32, n}) == {:ok, strings}
      end
    )
  end

  test "fixed-length bytes: trailing zeros are padding, the rest survives" do
    Prop.check(list(binary()), fn bins ->
      n = bins |> Enum.map(&byte_size/1) |> Enum.max(fn -> 0 end) |> max(1)
      {:ok, packed} = Strings.pack(bins, {:fixed_bytes, n})
      trimmed = Enum.map(bins, &String.trim_trailing(&1, <<0>>))

      padded = Enum.map(bins, &(&1 <> :binary.copy(<<0>>, n - byte_size(&1))))

      Strings.unpack(packed, {:fixed_bytes, n}) == {:ok, trimmed} and
        Strings.unpack(packed, {:raw_bytes, n}) == {:ok, padded}
    end)
  end

  test "vlen layout: decode(encode(items)) == items; any corruption is an error, never a crash" do
    Prop.check(tuple([list(binary()), integer(0, 1000), integer(0, 255)]), fn {items, at, byte} ->
      chunk = ExZarr.Test.Codecs.vlen_layout(items)
      n = length(items)
      round_trip = VlenLayout.decode(chunk, n) == {:ok, List.to_tuple(items)}

      pos = rem(at, byte_size(chunk))
      <<pre::binary-size(pos), _, post::binary>> = chunk
      mutated = VlenLayout.decode(<<pre::binary, byte, post::binary>>, n)
      truncated = VlenLayout.decode(binary_part(chunk, 0, pos), n)

      mutated_ok? =
        match?({:ok, t} when tuple_size(t) == n, mutated) or match?({:error, _}, mutated)

      round_trip and mutated_ok? and match?({:error, _}, truncated)
    end)
  end

  test "datetimes: from_datetime(to_naive(v)) == v for units down to microseconds" do
    units = for u <- ~w(W D h m s ms us), scale <- [1, 7], do: {:datetime64, u, scale}

    Prop.check(tuple([elements(units), integer(-10_000_000_000, 10_000_000_000)]), fn {dtype, v} ->
      case Datetime.to_naive(v, dtype) do
        {:ok, naive} -> Datetime.from_datetime(naive, dtype) == {:ok, v}
        {:error, {:out_of_range, ^v}} -> true
      end
    end)
  end

  test "metadata documents round-trip the new types and their fill values, v2 and v3" do
    cases = [
      {{:fixed_utf32, 3}, "é日"},
      {{:fixed_bytes, 4}, <<1, 0, 2>>},
      {{:raw_bytes, 2}, <<255, 0>>},
      {{:datetime64, "ns", 1}, 123},
      {{:timedelta64, "s", 60}, DType.nat()},
      {{:structured, [{"a", :int16, :little, {}}, {"b", {:fixed_utf32, 1}, :little, {2}}]},
       <<1::80>>},
      {:string, "fill"},
      {:bytes, <<0, 1>>}
    ]

    for {dtype, fill} <- cases, format <- [2, 3] do
      {:ok, meta} =
        ExZarr.Metadata.new(
          shape: {4},
          chunks: {2},
          dtype: dtype,
          fill_value: fill,
          zarr_format: format
        )

      {:ok, docs} = ExZarr.Metadata.to_documents(meta)
      {_, json} = hd(docs)
      {:ok, back} = ExZarr.Metadata.from_json(json)

      assert {back.dtype, back.fill_value, back.codecs} == {dtype, fill, meta.codecs},
             inspect({dtype, format})
    end
  end
end
