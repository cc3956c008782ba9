defmodule ExZarr.Metadata.AttributesTest do
  use ExUnit.Case, async: true

  alias ExZarr.Metadata.Attributes

  doctest ExZarr.Metadata.Attributes

  test "normalize keeps JSON values, turns atom keys and atoms into strings" do
    assert Attributes.normalize(%{a: %{b: [true, false, nil, :null, 1, 1.5, "s", :atom]}}) ==
             {:ok, %{"a" => %{"b" => [true, false, nil, nil, 1, 1.5, "s", "atom"]}}}

    assert Attributes.normalize(%{r: [:nan, :infinity, :neg_infinity]}) ==
             {:ok, %{"r" => [:nan, :infinity, :neg_infinity]}}

    assert Attributes.normalize(%{}) == {:ok, %{}}
  end

  test "normalize refuses what has no JSON form, however deep" do
    for bad <- [{1}, self(), <<0xFF>>, %URI{}, [1 | 2], 1..2] do
      assert {:error, {:invalid_attributes, _}} = Attributes.normalize(%{"k" => [%{"x" => bad}]}),
             inspect(bad)
    end

    for bad <- [[], "x", nil, %URI{}, %{1 => 2}, %{<<0xFF>> => 1}, %{{:k} => 1}] do
      assert {:error, {:invalid_attributes, _}} = Attributes.normalize(bad), inspect(bad)
    end
  end

  test "set replaces, update merges at the top level, delete drops keys" do
    current = %{"a" => %{"x" => 1}, "b" => 2}

    assert Attributes.change(current, {:set, %{c: 3}}) == {:ok, %{"c" => 3}}

    assert Attributes.change(current, {:update, %{a: %{y: 2}, c: 3}}) ==
             {:ok, %{"a" => %{"y" => 2}, "b" => 2, "c" => 3}}

    assert Attributes.change(current, {:delete, [:a, "zz"]}) == {:ok, %{"b" => 2}}
  end

  test "bad changes are errors and leave nothing half done" do
    current = %{"a" => 1}

    assert {:error, {:invalid_attributes, _}} = Attributes.change(current, {:update, %{b: {1}}})
    assert {:error, {:invalid_attributes, _}} = Attributes.change(current, {:set, [1]})
    assert Attributes.change(current, {:delete, [1]}) == {:error, {:invalid_attribute_keys, [1]}}

    assert Attributes.change(current, {:delete, "a"}) ==
             {:error, {:invalid_attribute_change, {:delete, "a"}}}

    assert Attributes.change(current, :clear) == {:error, {:invalid_attribute_change, :clear}}
  end
end
