defmodule ExZarr.JSONTest do
  use ExUnit.Case, async: true

  alias ExZarr.JSON

  doctest ExZarr.JSON

  describe "from_term/1" do
    test "a term with a JSON form comes back as decode/1 would read its encoding" do
      term = %{"b" => %{c: "é"}, a: [1, 2.5, nil, true, :word, :nan], d: [], e: %{}}
      assert {:ok, json} = JSON.from_term(term)
      assert JSON.decode(JSON.encode(json)) == {:ok, json}
      assert json["a"] == [1, 2.5, :null, true, "word", :nan]
    end

    test "terms without a JSON form are :error, however deep" do
      for bad <- [{1}, self(), make_ref(), <<255>>, %URI{}, [1 | 2], %{{1} => 1}, %{"k" => [{}]}] do
        assert JSON.from_term(bad) == :error, inspect(bad)
        assert JSON.from_term(%{"x" => [%{"y" => bad}]}) == :error
      end
    end
  end

  test "a deeply nested value encodes in proportion to its size, not its size times its depth" do
    deep = Enum.reduce(1..5000, [1, 2], fn _, acc -> [acc] end)
    json = JSON.encode(%{"a" => deep})
    # 5000 levels: with the indentation growing all the way down, 50 MB
    assert byte_size(json) < 800_000
    assert JSON.decode(json) == {:ok, %{"a" => deep}}

    # indentation as before for the first 32 levels
    assert JSON.encode([[1]]) == "[\n  [\n    1\n  ]\n]"
    {:ok, a} = ExZarr.create(shape: {2}, attributes: %{deep: deep})

    assert {:ok, %{"deep" => ^deep}} =
             with({:ok, b} <- ExZarr.open(storage: a.storage), do: {:ok, b.metadata.attributes})
  end

  test "decode errors name the problem" do
    for bad <- ["{", "", "[1,]", "[1e400]", <<255>>, "{} x"] do
      assert {:error, {:invalid_json, _}} = JSON.decode(bad)
    end
  end

  test "encode output is parsed back by jiffy and Python's json" do
    term = %{
      "s" => "é \" \\ \n \u0001",
      "n" => [0, -1, 18_446_744_073_709_551_615, 1.5, -0.0, 1.0e300, 5.0e-324],
      "e" => [%{}, []],
      :atom_key => [true, false, nil, :null, :word]
    }

    json = JSON.encode(term)

    assert JSON.decode(json) ==
             {:ok,
              %{
                "s" => "é \" \\ \n \u0001",
                "n" => [0, -1, 18_446_744_073_709_551_615, 1.5, -0.0, 1.0e300, 5.0e-324],
                "e" => [%{}, []],
                "atom_key" => [true, false, :null, :null, "word"]
              }}

    assert json =~ "-0.0"
    assert_raise ArgumentError, fn -> JSON.encode(%{"a" => {1, 2}}) end
    assert_raise ArgumentError, fn -> JSON.encode(%{1 => 2}) end
    assert_raise ArgumentError, fn -> JSON.encode(<<255>>) end
  end
end
