defmodule ExZarr.DType.Datetime do
  @moduledoc """
  numpy `datetime64` / `timedelta64` values (`{:datetime64, unit, scale}`,
  `{:timedelta64, unit, scale}`) <-> Elixir.

  Array data of these types is packed int64 counts of `scale` x `unit` since the Unix epoch
  (datetimes) or as a duration (timedeltas), with NaT stored as
  `-9223372036854775808` (`ExZarr.DType.nat/0`). These helpers convert single values and
  whole packed binaries; NaT becomes `nil` and `nil` becomes NaT.

  Conversions to Elixir keep microsecond precision (finer units are floored, as numpy does
  when casting to a coarser unit); conversions from Elixir floor to the type's unit.
  `"Y"` and `"M"` are calendar units (years and months since 1970-01). Values of the unit
  `"generic"` (numpy's `datetime64` without a unit) have no length in time: only NaT
  converts, anything else is `{:error, {:generic_unit, value}}`.

      iex> ExZarr.DType.Datetime.to_naive(86_400, {:datetime64, "s", 1})
      {:ok, ~N[1970-01-02 00:00:00]}
      iex> ExZarr.DType.Datetime.to_naive(-9223372036854775808, {:datetime64, "ns", 1})
      {:ok, nil}
      iex> ExZarr.DType.Datetime.from_datetime(~U[2020-01-01 00:00:00Z], {:datetime64, "D", 1})
      {:ok, 18262}
      iex> ExZarr.DType.Datetime.unpack(<<5::little-signed-64>>, {:datetime64, "ms", 10})
      {:ok, [~N[1970-01-01 00:00:00.050]]}

  With an array (numpy `datetime64[s]`; the fill value is NaT unless given):

      iex> dtype = {:datetime64, "s", 1}
      iex> {:ok, a} = ExZarr.create(shape: {3}, dtype: dtype, storage: :memory)
      iex> {:ok, packed} = ExZarr.DType.Datetime.pack([~U[2024-02-29 12:00:00Z], nil], dtype)
      iex> :ok = ExZarr.Array.set_slice(a, packed, start: {0}, stop: {2})
      iex> {:ok, data} = ExZarr.Array.get_slice(a)
      iex> ExZarr.DType.Datetime.unpack(data, dtype, as: :datetime)
      {:ok, [~U[2024-02-29 12:00:00Z], nil, nil]}
  """

  alias ExZarr.DType

  @nat -0x8000000000000000
  @int64_max 0x7FFFFFFFFFFFFFFF
  @epoch_seconds 62_167_219_200

  @seconds %{"W" => 604_800, "D" => 86_400, "h" => 3_600, "m" => 60, "s" => 1}
  @per_second %{
    "ms" => 1_000,
    "us" => 1_000_000,
    "ns" => 1_000_000_000,
    "ps" => 1_000_000_000_000,
    "fs" => 1_000_000_000_000_000,
    "as" => 1_000_000_000_000_000_000
  }

  @type time_dtype :: {:datetime64 | :timedelta64, DType.time_unit(), pos_integer()}

  @doc """
  A datetime value as a `NaiveDateTime` (`nil` for NaT). `{:error, {:out_of_range, value}}`
  when it is outside the years Elixir's calendar handles.
  """
  @spec to_naive(integer(), time_dtype()) :: {:ok, NaiveDateTime.t() | nil} | {:error, term()}
  def to_naive(@nat, {:datetime64, _, _}), do: {:ok, nil}
  def to_naive(value, {:datetime64, "generic", _}), do: {:error, {:generic_unit, value}}

  def to_naive(value, {:datetime64, unit, scale}) when is_integer(value) do
    count = value * scale

    case unit do
      "Y" -> date_time(1970 + count, 1)
      "M" -> date_time(1970 + Integer.floor_div(count, 12), Integer.mod(count, 12) + 1)
      _ -> from_units(count, unit)
    end
    |> case do
      {:ok, naive} -> {:ok, naive}
      :error -> {:error, {:out_of_range, value}}
    end
  end

  defp date_time(year, month) do
    case NaiveDateTime.new(year, month, 1, 0, 0, 0) do
      {:ok, naive} -> {:ok, naive}
      {:error, _} -> :error
    end
  end

  defp from_units(count, unit) do
    {seconds, micro, precision} =
      case @seconds do
        %{^unit => s} ->
          {count * s, 0, 0}

        _ ->
          per = Map.fetch!(@per_second, unit)
          frac = Integer.mod(count, per)
          {Integer.floor_div(count, per), div(frac * 1_000_000, per), min(6, digits(per))}
      end

    {:ok, NaiveDateTime.from_gregorian_seconds(seconds + @epoch_seconds, {micro, precision})}
  rescue
    _ in [ArgumentError, FunctionClauseError] -> :error
  end

  defp digits(per), do: per |> Integer.to_string() |> byte_size() |> Kernel.-(1)

  @doc """
  A datetime value as a UTC `DateTime` (`nil` for NaT).

      iex> ExZarr.DType.Datetime.to_datetime(1, {:datetime64, "h", 1})
      {:ok, ~U[1970-01-01 01:00:00Z]}
  """
  @spec to_datetime(integer(), time_dtype()) :: {:ok, DateTime.t() | nil} | {:error, term()}
  def to_datetime(value, dtype) do
    case to_naive(value, dtype) do
      {:ok, nil} -> {:ok, nil}
      {:ok, naive} -> DateTime.from_naive(naive, "Etc/UTC")
      error -> error
    end
  end

  @doc """
  The datetime value of a `DateTime` (shifted to UTC first), a `NaiveDateTime` (taken as UTC)
  or `nil` (NaT), floored to the type's unit. `{:error, {:out_of_range, dt}}` when it does
  not fit in an int64.
  """
  @spec from_datetime(DateTime.t() | NaiveDateTime.t() | nil, time_dtype()) ::
          {:ok, integer()} | {:error, term()}
  def from_datetime(nil, {:datetime64, _, _}), do: {:ok, @nat}
  def from_datetime(dt, {:datetime64, "generic", _}), do: {:error, {:generic_unit, dt}}

  def from_datetime(%DateTime{} = dt, dtype),
    do: from_datetime(DateTime.to_naive(DateTime.shift_zone!(dt, "Etc/UTC")), dtype)

  def from_datetime(%NaiveDateTime{} = dt, {:datetime64, unit, scale}) do
    count =
      case unit do
        "Y" ->
          dt.year - 1970

        "M" ->
          (dt.year - 1970) * 12 + dt.month - 1

        _ ->
          {seconds, _} = NaiveDateTime.to_gregorian_seconds(dt)
          {micro, _} = dt.microsecond
          to_units((seconds - @epoch_seconds) * 1_000_000 + micro, unit)
      end

    in_range(Integer.floor_div(count, scale), dt)
  end

  defp to_units(micros, unit) do
    case @seconds do
      %{^unit => s} -> Integer.floor_div(micros, s * 1_000_000)
      _ -> Integer.floor_div(micros * Map.fetch!(@per_second, unit), 1_000_000)
    end
  end

  defp in_range(value, _source) when value > @nat and value <= @int64_max, do: {:ok, value}
  defp in_range(_value, source), do: {:error, {:out_of_range, source}}

  @doc """
  A timedelta value in a `System.time_unit()` (`:second`, `:millisecond`, `:microsecond`,
  `:nanosecond`), floored; `nil` for NaT. Calendar units (`"Y"`, `"M"`) have no fixed length:
  `{:error, {:calendar_unit, unit}}`.

      iex> ExZarr.DType.Datetime.timedelta_to(3, {:timedelta64, "ms", 10}, :millisecond)
      {:ok, 30}
  """
  @spec timedelta_to(integer(), time_dtype(), System.time_unit()) ::
          {:ok, integer() | nil} | {:error, term()}
  def timedelta_to(@nat, {:timedelta64, _, _}, _to), do: {:ok, nil}

  def timedelta_to(value, {:timedelta64, unit, scale}, to) when is_integer(value) do
    with {:ok, {num, den}} <- ratio(unit, to),
         do: {:ok, Integer.floor_div(value * scale * num, den)}
  end

  @doc """
  The timedelta value of an amount in a `System.time_unit()` (`nil` gives NaT), floored to the
  type's unit.

      iex> ExZarr.DType.Datetime.timedelta_from(1, :second, {:timedelta64, "ms", 1})
      {:ok, 1000}
  """
  @spec timedelta_from(integer() | nil, System.time_unit(), time_dtype()) ::
          {:ok, integer()} | {:error, term()}
  def timedelta_from(nil, _from, {:timedelta64, _, _}), do: {:ok, @nat}

  def timedelta_from(amount, from, {:timedelta64, unit, scale}) when is_integer(amount) do
    with {:ok, {num, den}} <- ratio(unit, from),
         do: in_range(Integer.floor_div(amount * den, num * scale), amount)
  end

  # unit -> time_unit as {num, den}: 1 unit = num / den time_units.
  defp ratio(unit, _to) when unit in ["Y", "M"], do: {:error, {:calendar_unit, unit}}
  defp ratio("generic", _to), do: {:error, {:generic_unit, "generic"}}

  defp ratio(unit, to) do
    per = System.convert_time_unit(1, :second, to)

    case @seconds do
      %{^unit => s} -> {:ok, {s * per, 1}}
      _ -> {:ok, {per, Map.fetch!(@per_second, unit)}}
    end
  end

  @doc """
  Unpacks a binary of packed int64 datetime values into a list of `NaiveDateTime` (`nil` for
  NaT); `as: :datetime` gives UTC `DateTime`s, `as: :integer` the raw values.
  """
  @spec unpack(binary(), time_dtype(), keyword()) :: {:ok, list()} | {:error, term()}
  def unpack(data, dtype, opts \\ [])

  def unpack(data, dtype, opts) when rem(byte_size(data), 8) == 0 do
    values = for <<v::little-signed-64 <- data>>, do: v

    case Keyword.get(opts, :as, :naive) do
      :integer -> {:ok, values}
      :naive -> ExZarr.Result.map_ok(values, &to_naive(&1, dtype))
      :datetime -> ExZarr.Result.map_ok(values, &to_datetime(&1, dtype))
    end
  end

  def unpack(data, _dtype, _opts),
    do: {:error, {:wrong_data_size, item_size: 8, got: byte_size(data)}}

  @doc """
  Packs a list of `DateTime` / `NaiveDateTime` (datetime types) / `nil` (NaT) / integer values
  into the binary of int64 values an array of `dtype` takes.

      iex> ExZarr.DType.Datetime.pack([~N[1970-01-01 00:00:02], nil], {:datetime64, "s", 1})
      {:ok, <<2::little-signed-64, -9223372036854775808::little-signed-64>>}
  """
  @spec pack([DateTime.t() | NaiveDateTime.t() | integer() | nil], time_dtype()) ::
          {:ok, binary()} | {:error, term()}
  def pack(values, dtype) when is_list(values) do
    values
    |> ExZarr.Result.map_ok(fn
      nil ->
        {:ok, @nat}

      v when is_integer(v) ->
        in_range_or_nat(v)

      %s{} = v when s in [DateTime, NaiveDateTime] and elem(dtype, 0) == :datetime64 ->
        from_datetime(v, dtype)

      v ->
        {:error, {:invalid_value, v}}
    end)
    |> case do
      {:ok, ints} -> {:ok, for(v <- ints, into: <<>>, do: <<v::little-signed-64>>)}
      error -> error
    end
  end

  defp in_range_or_nat(v) when v >= @nat and v <= @int64_max, do: {:ok, v}
  defp in_range_or_nat(v), do: {:error, {:out_of_range, v}}
end
