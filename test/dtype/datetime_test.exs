defmodule ExZarr.DType.DatetimeTest do
  use ExUnit.Case, async: true

  alias ExZarr.DType
  alias ExZarr.DType.Datetime
  alias ExZarr.Test.Python

  doctest Datetime

  describe "datetimes" do
    test "conversions agree with numpy" do
      values = [0, 1, -1, 86_399, 1_577_836_800_123, -62_135_596_800_000, DType.nat()]

      units = [
        {"ms", 1},
        {"s", 1},
        {"us", 3},
        {"ns", 1},
        {"m", 1},
        {"h", 5},
        {"D", 1},
        {"W", 1},
        {"M", 1},
        {"Y", 1}
      ]

      code = """
      import sys, json, numpy as np
      out = []
      for u in json.loads(sys.argv[1]):
          for v in json.loads(sys.argv[2]):
              d = np.array([v], dtype=f"M8[{u}]")
              try:
                  out.append(np.datetime_as_string(d.astype("M8[us]"))[0])
              except Exception:
                  out.append(None)
      print(json.dumps(out))
      """

      unit_names = Enum.map(units, fn {u, s} -> if s == 1, do: u, else: "#{s}#{u}" end)
      {:ok, out} = Python.run(code, [:jiffy.encode(unit_names), :jiffy.encode(values)])
      numpy = out |> String.trim() |> :jiffy.decode()

      ours =
        for {unit, scale} <- units, v <- values do
          case Datetime.to_naive(v, {:datetime64, unit, scale}) do
            {:ok, nil} -> "NaT"
            {:ok, naive} -> naive |> NaiveDateTime.truncate(:microsecond) |> iso_us()
            {:error, {:out_of_range, _}} -> :out_of_range
          end
        end

      pairs = Enum.zip(numpy, ours)
      assert length(pairs) == length(units) * length(values)

      # Where numpy gives a date in years 1..9999 we give the same; outside them (numpy's
      # int64 overflow or years Elixir's calendar does not handle) we give an error.
      for {n, o} <- pairs do
        if is_binary(n) and n != "NaT" and year_in_range?(n),
          do: assert(n == o),
          else: assert(o in [n, :out_of_range], inspect({n, o}))
      end
    end

    test "to and from Elixir values floor to the unit and keep NaT" do
      dtype = {:datetime64, "ms", 1}
      assert Datetime.from_datetime(~N[1969-12-31 23:59:59.9995], dtype) == {:ok, -1}
      assert Datetime.from_datetime(~U[2000-01-01 00:00:00Z], {:datetime64, "M", 1}) == {:ok, 360}
      assert Datetime.from_datetime(nil, dtype) == {:ok, DType.nat()}
      assert Datetime.to_datetime(DType.nat(), dtype) == {:ok, nil}

      assert Datetime.to_naive(-1, {:datetime64, "ns", 1}) ==
               {:ok, ~N[1969-12-31 23:59:59.999999]}

      assert {:error, {:out_of_range, _}} = Datetime.to_naive(10 ** 15, {:datetime64, "D", 1})

      assert {:error, {:out_of_range, _}} =
               Datetime.from_datetime(~N[2300-01-01 00:00:00], {:datetime64, "ns", 1})

      {:ok, packed} = Datetime.pack([~N[2020-01-01 00:00:00], nil, 5], dtype)

      assert Datetime.unpack(packed, dtype, as: :integer) ==
               {:ok, [1_577_836_800_000, DType.nat(), 5]}

      assert Datetime.unpack(packed, dtype, as: :datetime) |> elem(1) |> hd() ==
               ~U[2020-01-01 00:00:00.000Z]

      assert {:error, {:invalid_value, "x"}} = Datetime.pack(["x"], dtype)
      assert {:error, {:wrong_data_size, _}} = Datetime.unpack("abc", dtype)

      td = {:timedelta64, "us", 250}
      assert Datetime.timedelta_to(-3, td, :millisecond) == {:ok, -1}
      assert Datetime.timedelta_from(1, :millisecond, td) == {:ok, 4}
      assert Datetime.timedelta_to(DType.nat(), td, :second) == {:ok, nil}

      assert Datetime.timedelta_to(1, {:timedelta64, "M", 1}, :second) ==
               {:error, {:calendar_unit, "M"}}
    end
  end

  describe "units as numpy and the numpy.datetime64 spec write them" do
    test "no unit (numpy's \"<M8\", zarr-python's default) is the unit \"generic\"" do
      generic = {:datetime64, "generic", 1}
      assert DType.from_v2("<M8") == {:ok, generic, :little}
      assert DType.from_v2(">m8") == {:ok, {:timedelta64, "generic", 1}, :big}
      assert DType.from_v2("<M8[5generic]") == {:ok, {:datetime64, "generic", 5}, :little}
      assert DType.to_v2(generic, :little) == "<M8"
      assert DType.to_v2({:datetime64, "generic", 5}, :little) == "<M8[5generic]"

      v3 = %{
        "name" => "numpy.datetime64",
        "configuration" => %{"unit" => "generic", "scale_factor" => 1}
      }

      assert DType.from_v3(v3) == {:ok, generic}
      assert DType.to_v3(generic) == v3
    end

    test "generic values have no length in time: only NaT converts" do
      assert Datetime.to_naive(DType.nat(), {:datetime64, "generic", 1}) == {:ok, nil}
      assert Datetime.to_naive(5, {:datetime64, "generic", 1}) == {:error, {:generic_unit, 5}}

      assert Datetime.from_datetime(~U[2020-01-01 00:00:00Z], {:datetime64, "generic", 1}) ==
               {:error, {:generic_unit, ~U[2020-01-01 00:00:00Z]}}

      assert Datetime.timedelta_to(1, {:timedelta64, "generic", 1}, :second) ==
               {:error, {:generic_unit, "generic"}}

      assert {:error, _} =
               ExZarr.create(
                 shape: {2},
                 dtype: {:datetime64, "generic", 1},
                 fill_value: ~U[2020-01-01 00:00:00Z]
               )

      {:ok, a} = ExZarr.create(shape: {2}, dtype: {:datetime64, "generic", 1})

      assert ExZarr.Array.get_slice(a) ==
               {:ok, :binary.copy(<<DType.nat()::little-signed-64>>, 2)}
    end

    test "\"μs\" is \"us\"" do
      v3 = %{
        "name" => "numpy.timedelta64",
        "configuration" => %{"unit" => "μs", "scale_factor" => 2}
      }

      assert DType.from_v3(v3) == {:ok, {:timedelta64, "us", 2}}
      assert DType.from_v2("<M8[10μs]") == {:ok, {:datetime64, "us", 10}, :little}
    end
  end

  defp iso_us(naive) do
    {us, _} = naive.microsecond
    naive |> Map.put(:microsecond, {us, 6}) |> NaiveDateTime.to_iso8601()
  end

  defp year_in_range?(iso) do
    case Integer.parse(iso) do
      {year, "-" <> _} -> year >= 1 and year <= 9999
      _ -> false
    end
  end
end
