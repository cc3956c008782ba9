defmodule ExZarr.Storage.Mongo.BSONTest do
  use ExUnit.Case, async: true

  alias ExZarr.Storage.Mongo.BSON
  alias ExZarr.Test.Prop

  doctest BSON

  import :proper_types, only: [oneof: 1, integer: 2, list: 1, binary: 0, byte: 0]

  defp bytes(doc), do: IO.iodata_to_binary(BSON.encode(doc))

  # PropEr gives a seed, the document is drawn from it with :rand (PropEr's own nested
  # generators are slow here), so a failure names the seed that reproduces it.
  defp seeds, do: integer(0, 0xFFFFFFFF)

  defp document(seed) do
    :rand.seed(:exsss, seed)
    random_document(3)
  end

  defp random_document(depth),
    do: Map.new(1..:rand.uniform(6)//1, fn _ -> {random_string(true), random_value(depth)} end)

  defp random_value(depth) do
    case :rand.uniform(if depth == 0, do: 16, else: 18) do
      1 -> (:rand.uniform() - 0.5) * :math.pow(10, :rand.uniform(600) - 300)
      2 -> :rand.uniform(0x100000000) - 0x80000001
      3 -> :rand.uniform(0x10000000000000000) - 0x8000000000000001
      4 -> random_string(false)
      5 -> :rand.uniform(2) == 1
      6 -> Enum.random([nil, :min_key, :max_key, :undefined])
      7 -> Enum.random([:nan, :infinity, :neg_infinity])
      8 -> {:binary, :rand.uniform(256) - 1, :rand.bytes(:rand.uniform(40) - 1)}
      9 -> {:object_id, :rand.bytes(12)}
      10 -> {:datetime, :rand.uniform(0x10000000000000000) - 0x8000000000000001}
      11 -> {:timestamp, :rand.uniform(0x100000000) - 1, :rand.uniform(0x100000000) - 1}
      12 -> {:regex, random_string(true), random_string(true)}
      13 -> {:decimal128, :rand.bytes(16)}
      14 -> -0.0
      15 -> ""
      16 -> []
      17 -> random_document(depth - 1)
      18 -> for _ <- 1..:rand.uniform(5), do: random_value(depth - 1)
    end
  end

  # Random code points (NUL left out of C strings), some multi-byte.
  defp random_string(cstring?) do
    low = if cstring?, do: 1, else: 0

    for _ <- 1..:rand.uniform(8)//1, into: "" do
      case :rand.uniform(3) do
        1 -> <<low + :rand.uniform(127 - low)::utf8>>
        2 -> <<0x80 + :rand.uniform(0xD000)::utf8>>
        3 -> <<0x10000 + :rand.uniform(0xFFFF)::utf8>>
      end
    end
  end

  describe "round trip" do
    test "every value decodes to what was encoded" do
      Prop.check(seeds(), &(BSON.decode(bytes(document(&1))) == {:ok, document(&1)}), 1000)
    end

    test "ordered documents keep their order on the wire; int64 tags are dropped" do
      doc = [{"find", "c"}, {"filter", [{"a", 1}]}, {"n", {:int64, 5}}, {"empty", []}]
      assert <<_::32, 2, "find", 0, _::binary>> = bytes(doc)

      assert BSON.decode(bytes(doc)) ==
               {:ok, %{"find" => "c", "filter" => %{"a" => 1}, "n" => 5, "empty" => []}}

      assert <<_::32, 0x12, "n", 0, 5::little-64, 0>> = bytes([{"n", {:int64, 5}}])
      assert <<_::32, 0x10, "n", 0, 5::little-32, 0>> = bytes([{"n", 5}])
    end

    test "binary data goes out as the caller's binary, not a copy" do
      data = :crypto.strong_rand_bytes(100_000)
      iodata = BSON.encode([{"data", {:binary, 0, data}}])
      assert Enum.any?(List.flatten(iodata), &(is_binary(&1) and :erts_debug.same(&1, data)))
    end

    test "terms that are not BSON raise when encoded (only this client builds them)" do
      for bad <- [[{"a", self()}], [{"a", <<255>>}], [{<<0>>, 1}], [{"a", {:int64, 2 ** 64}}]] do
        assert_raise ArgumentError, fn -> BSON.encode(bad) end
      end
    end
  end

  describe "decoding hostile bytes" do
    defp outcome_ok?(binary) do
      case BSON.decode(binary) do
        {:ok, %{}} -> true
        {:error, {:invalid_bson, _}} -> true
      end
    end

    test "random bytes give a document or an error, never an exception" do
      Prop.check(binary(), &outcome_ok?/1, 2000)
    end

    test "random bytes behind a plausible length give a document or an error" do
      Prop.check(binary(), &outcome_ok?(<<byte_size(&1) + 4::little-32, &1::binary>>), 2000)
    end

    test "mutated valid documents give a document or an error, never an exception" do
      mutation =
        oneof([{:set, integer(0, 400), byte()}, {:cut, integer(0, 400)}, {:append, binary()}])

      Prop.check(
        {seeds(), list(mutation)},
        fn {seed, mutations} ->
          outcome_ok?(Enum.reduce(mutations, bytes(document(seed)), &mutate/2))
        end,
        1000
      )
    end

    defp mutate({:set, at, byte}, bin) when at < byte_size(bin),
      do: binary_part(bin, 0, at) <> <<byte>> <> binary_part(bin, at + 1, byte_size(bin) - at - 1)

    defp mutate({:cut, at}, bin) when at < byte_size(bin), do: binary_part(bin, 0, at)
    defp mutate({:append, tail}, bin), do: bin <> tail
    defp mutate(_mutation, bin), do: bin

    test "named defects" do
      good = bytes([{"s", "abc"}])
      assert {:ok, _} = BSON.decode(good)
      assert BSON.decode(good <> <<0>>) == {:error, {:invalid_bson, :trailing_bytes}}

      assert BSON.decode(binary_part(good, 0, 10)) ==
               {:error, {:invalid_bson, :bad_document_size}}

      assert BSON.decode(<<5::little-32, 1>>) == {:error, {:invalid_bson, :missing_terminator}}
      assert BSON.decode(<<4::little-32>>) == {:error, {:invalid_bson, :bad_document_size}}

      # a string whose length runs past its document, one not ended by NUL, bad UTF-8
      assert {:error, {:invalid_bson, _}} =
               BSON.decode(<<17::little-32, 2, "s", 0, 99::little-32, "abc", 0, 0>>)

      assert {:error, {:invalid_bson, :unterminated_string}} =
               BSON.decode(<<16::little-32, 2, "s", 0, 4::little-32, "abcd", 0>>)

      assert {:error, {:invalid_bson, :invalid_utf8}} =
               BSON.decode(bytes([{"s", "abc"}]) |> String.replace("abc", <<0xFF, 0xFE, 0xFD>>))

      assert BSON.decode(<<8::little-32, 0x42, "k", 0, 0>>) ==
               {:error, {:invalid_bson, {:unsupported_type, 0x42}}}

      assert BSON.decode(<<7::little-32, 8, "k", 0>>) ==
               {:error, {:invalid_bson, :unterminated_cstring}}

      assert BSON.decode(<<9::little-32, 8, "k", 0, 2, 0>>) ==
               {:error, {:invalid_bson, {:bad_value, 8}}}
    end

    test "documents nested deeper than 100 levels are refused, not recursed into" do
      deep = Enum.reduce(1..101, %{}, fn _, inner -> %{"d" => inner} end)
      assert BSON.decode(bytes(deep)) == {:error, {:invalid_bson, :too_deep}}
      ok = Enum.reduce(1..100, %{}, fn _, inner -> %{"d" => inner} end)
      assert BSON.decode(bytes(ok)) == {:ok, ok}
    end
  end

  test "object ids made on one node in one second sort in the order they were made" do
    ids = for _ <- 1..1000, do: BSON.object_id()
    assert Enum.uniq(ids) == ids

    ids
    |> Enum.chunk_by(fn {:object_id, <<seconds::32, _::binary>>} -> seconds end)
    |> Enum.each(fn same_second -> assert Enum.sort(same_second) == same_second end)
  end
end
