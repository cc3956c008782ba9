defmodule ExZarr.Codecs.AstypeTest do
  use ExUnit.Case, async: true

  import ExZarr.Test.Codecs, only: [spec: 2, round_trip: 3]
  alias ExZarr.Codecs.Astype

  test "stored converted to encode_dtype, read back as the chunk's type" do
    {:ok, s} = Astype.init(%{"encode_dtype" => "<f4"}, spec({2}, :float64))
    data = <<1.5::float-64-little, 2.0::float-64-little>>
    {encoded, decoded} = round_trip(Astype, s, data)
    assert encoded == <<1.5::float-32-little, 2.0::float-32-little>>
    assert decoded == {:ok, data}
    assert Astype.configuration(s) == %{"encode_dtype" => "<f4", "decode_dtype" => "<f8"}
    assert Astype.resolve_spec(spec({2}, :float64), s).dtype == :float32
  end

  test "integers stored narrower wrap as numpy's casts do" do
    {:ok, s} = Astype.init(%{"encode_dtype" => "|u1"}, spec({2}, :int32))
    {encoded, _} = round_trip(Astype, s, <<300::32-little, -1::signed-32-little>>)
    assert encoded == <<44, 255>>
  end

  test "infinities stay infinite in float16 (they became 1.0)" do
    {:ok, s} = Astype.init(%{"encode_dtype" => "<f2"}, spec({3}, :float64))
    inf = <<0x7FF0000000000000::64-little>>
    neg_inf = <<0xFFF0000000000000::64-little>>
    {encoded, decoded} = round_trip(Astype, s, [inf, neg_inf, <<65520.0::float-64-little>>])
    assert encoded == <<0x7C00::16-little, 0xFC00::16-little, 0x7C00::16-little>>
    assert decoded == {:ok, inf <> neg_inf <> inf}
  end

  test "encode_dtype is required" do
    assert {:error, _} = Astype.init(%{}, spec({2}, :float64))
    assert {:error, _} = Astype.init(%{"encode_dtype" => "<c8"}, spec({2}, :float64))
  end
end
