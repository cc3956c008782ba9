defmodule ExZarr.JSONTest do
  use ExUnit.Case, async: true

  alias ExZarr.JSON

  doctest ExZarr.JSON

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
