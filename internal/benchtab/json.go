package benchtab

import (
	"encoding/json"
	"io"
	"math"
)

// jsonTables and the types below are the JSON format (see WriteJSON).
type jsonTables struct {
	Tables   []jsonTable `json:"tables"`
	Warnings []string    `json:"warnings,omitempty"`
}

type jsonTable struct {
	Config     []jsonField   `json:"config"`
	Unit       string        `json:"unit"`
	Assumption string        `json:"assumption"`
	Better     string        `json:"better,omitempty"`
	Columns    []jsonColumn  `json:"columns"`
	Rows       []jsonRow     `json:"rows"`
	Geomean    []jsonGeomean `json:"geomean"`
}

type jsonField struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

type jsonColumn struct {
	Label string      `json:"label"`
	Key   []jsonField `json:"key"`
}

type jsonRow struct {
	Label string      `json:"label"`
	Key   []jsonField `json:"key"`
	Cells []*jsonCell `json:"cells"`
}

type jsonCell struct {
	N          int        `json:"n"`
	Values     []*float64 `json:"values"`
	Center     *float64   `json:"center"`
	Low        *float64   `json:"low"`
	High       *float64   `json:"high"`
	Confidence *float64   `json:"confidence"`
	Range      string     `json:"range"`
	RangePct   *float64   `json:"range_pct"`
	Notes      []string   `json:"notes,omitempty"`
	Delta      *jsonDelta `json:"delta,omitempty"`
}

type jsonDelta struct {
	Base        *float64 `json:"base"`
	Text        string   `json:"text"`
	Pct         *float64 `json:"pct"`
	Significant bool     `json:"significant"`
	P           *float64 `json:"p,omitempty"`
	Alpha       float64  `json:"alpha"`
	NBase       int      `json:"n_base"`
	N           int      `json:"n"`
	Test        string   `json:"test"`
	Notes       []string `json:"notes,omitempty"`
}

type jsonGeomean struct {
	Center   *float64 `json:"center"`
	Ratio    *float64 `json:"ratio,omitempty"`
	DeltaPct *float64 `json:"delta_pct,omitempty"`
	Text     string   `json:"text,omitempty"`
	Notes    []string `json:"notes,omitempty"`
}

// jsonNum is x for JSON: nil (null) unless x is finite.
func jsonNum(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

func jsonFields(fs []Field) []jsonField {
	out := make([]jsonField, len(fs))
	for i, f := range fs {
		out[i] = jsonField{f.Key, f.Value}
	}
	return out
}

// WriteJSON writes the tables as one indented JSON object, with every number unscaled in the table's
// (tidied) unit and null where a bound is infinite or a figure undefined:
//
//	{
//	  "tables": [{
//	    "config":     [{"key": "goos", "value": "linux"}, ...],  // table key less the unit
//	    "unit":       "sec/op",
//	    "assumption": "exact" | "nothing" | "normal",
//	    "better":     "lower" | "higher",                      // omitted if unknown
//	    "columns":    [{"label": "old.txt", "key": [{"key": ".file", "value": "old.txt"}]}, ...],
//	    "rows": [{
//	      "label": "Encode/format=json-48",
//	      "key":   [{"key": ".fullname", "value": "Encode/format=json-48"}],
//	      "cells": [                                            // one per column, null if empty
//	        {"n": 10, "values": [...],                          // the sample, ascending
//	         "center": 1.718e-06, "low": 1.71e-06, "high": 1.74e-06,
//	         "confidence": 0.95,                                // the interval's actual level
//	         "range": "1%", "range_pct": 1.28,                  // "±" as printed, and unrounded
//	         "notes": ["..."],                                  // footnotes of the text format
//	         "delta": {                                         // absent in the first column
//	           "base": 1.718e-06,                               // the baseline cell's centre
//	           "text": "-17.20%" | "~" | "0.00%" | "?",
//	           "pct": -17.20,                                   // unrounded, even when "~"
//	           "significant": true,                             // p < alpha (always for exact)
//	           "p": 0.00001, "alpha": 0.05,                     // p omitted for exact units
//	           "n_base": 10, "n": 10,
//	           "test": "p=0.000 n=10",
//	           "notes": ["..."]}}]}],
//	    "geomean": [                                            // one per column
//	      {"center": 2.29e-06, "ratio": 0.91, "delta_pct": -8.94, "text": "-8.94%", "notes": [...]}]
//	  }],
//	  "warnings": ["..."]
//	}
func (ts *Tables) WriteJSON(w io.Writer) error {
	out := jsonTables{Tables: []jsonTable{}, Warnings: ts.Warnings}
	for _, t := range ts.Tables {
		jt := jsonTable{Config: jsonFields(t.Config), Unit: t.Unit, Assumption: t.Assumption}
		switch t.Better {
		case 1:
			jt.Better = "higher"
		case -1:
			jt.Better = "lower"
		}
		for _, col := range t.Cols {
			jt.Columns = append(jt.Columns, jsonColumn{col.Label, jsonFields(col.Fields)})
		}
		for _, r := range t.Rows {
			jr := jsonRow{Label: r.Label, Key: jsonFields(r.Fields), Cells: make([]*jsonCell, len(r.Cells))}
			for j, c := range r.Cells {
				if c == nil {
					continue
				}
				jc := &jsonCell{
					N: len(c.Values), Center: jsonNum(c.Center), Low: jsonNum(c.Lo), High: jsonNum(c.Hi),
					Confidence: jsonNum(c.Confidence), Range: c.Range, Notes: c.Notes,
				}
				for _, v := range c.Values {
					jc.Values = append(jc.Values, jsonNum(v))
				}
				if p, ok := c.RangePct(); ok {
					jc.RangePct = jsonNum(p)
				}
				if d := c.Delta; d != nil {
					jd := &jsonDelta{
						Base: jsonNum(d.Base), Text: d.Text, Significant: d.Significant(),
						Alpha: d.Alpha, NBase: d.N1, N: d.N2, Test: d.Test, Notes: d.Notes,
					}
					if p, ok := d.Pct(c.Center); ok {
						jd.Pct = jsonNum(p)
					}
					if t.Assumption != "exact" {
						jd.P = jsonNum(d.P)
					}
					jc.Delta = jd
				}
				jr.Cells[j] = jc
			}
			jt.Rows = append(jt.Rows, jr)
		}
		for j := range t.Geomean {
			g := &t.Geomean[j]
			jg := jsonGeomean{Text: g.DeltaText(j), Notes: g.Notes}
			if g.HasCenter {
				jg.Center = jsonNum(g.Center)
			}
			if g.HasRatio {
				jg.Ratio = jsonNum(g.Ratio)
				jg.DeltaPct = jsonNum((g.Ratio - 1) * 100)
			}
			jt.Geomean = append(jt.Geomean, jg)
		}
		out.Tables = append(out.Tables, jt)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
