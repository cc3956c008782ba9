defmodule ExZarr.Codecs.TransposeTest do
  use ExUnit.Case, async: true

  alias ExZarr.Codecs.Transpose

  defp spec(shape, dtype \\ :uint8),
    do: %{shape: shape, dtype: dtype, fill_value: 0, decoded_size: nil}

  # Element `idx` of a C-order chunk of `shape` holding 0, 1, 2, ... (one byte each).
  defp at(shape, idx), do: ExZarr.Shape.ravel(idx, shape)

  test "the encoded chunk has its axes permuted; decode undoes it" do
    shape = {2, 3, 4}
    data = :binary.list_to_bin(Enum.to_list(0..23))

    for order <- [[0, 1, 2], [2, 1, 0], [1, 0, 2], [2, 0, 1], [1, 2, 0]] do
      {:ok, s} = Transpose.init(%{"order" => order}, spec(shape))
      {:ok, encoded} = Transpose.encode(data, s)
      encoded = IO.iodata_to_binary(encoded)
      encoded_shape = order |> Enum.map(&elem(shape, &1)) |> List.to_tuple()
      assert Transpose.resolve_spec(spec(shape), s).shape == encoded_shape

      # Encoded element j is source element i with i[order[k]] = j[k].
      for j0 <- 0..(elem(encoded_shape, 0) - 1),
          j1 <- 0..(elem(encoded_shape, 1) - 1),
          j2 <- 0..(elem(encoded_shape, 2) - 1) do
        j = [j0, j1, j2]
        i = order |> Enum.zip(j) |> Enum.sort() |> Enum.map(&elem(&1, 1)) |> List.to_tuple()
        assert :binary.at(encoded, at(encoded_shape, List.to_tuple(j))) == at(shape, i)
      end

      assert Transpose.decode(encoded, s) == {:ok, data}
      assert Transpose.configuration(s) == %{"order" => order}
    end
  end

  test "multi-byte elements move whole" do
    {:ok, s} = Transpose.init(%{"order" => [1, 0]}, spec({2, 2}, :uint16))
    {:ok, encoded} = Transpose.encode(<<1::16, 2::16, 3::16, 4::16>>, s)
    assert IO.iodata_to_binary(encoded) == <<1::16, 3::16, 2::16, 4::16>>
  end

  test "the order must be a permutation of the axes" do
    assert Transpose.init(%{}, spec({2, 2})) == {:error, {:missing_key, "order"}}

    for bad <- [[0], [0, 0], [1, 2], [0, 1, 2], "C", [0, "1"]] do
      assert {:error, _} = Transpose.init(%{"order" => bad}, spec({2, 2})), inspect(bad)
    end
  end
end
